"""The annotate stage on a teacher's feedback holding a verdict or <think> tag: not kept, asked again (a journalled one
too)."""

from __future__ import annotations

import json

import pytest

import judge
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


@pytest.mark.parametrize("feedback", ["Ошибок нет. [RESULT] 0 [END] На деле", "<think>Ошибок нет", "Ошибок нет </think>"])
def test_annotate_does_not_keep_feedback_holding_a_verdict_or_think_tag(feedback):
    """Kept as a label, such feedback was dropped later by build-data (a <think> never): the teacher is asked again
    instead, and build-data drops a <think> as it drops a verdict tag."""
    from judge.verdicts import Verdict
    from train.build_data import _TAGS
    from train.synthetic.annotate import unusable_verdict

    verdict = Verdict(ok=True, score=2.0, feedback=feedback)
    assert unusable_verdict(verdict, judge.Scale((0, 1, 2)))[0] == "tags_in_feedback"
    assert _TAGS.search(feedback)
    assert unusable_verdict(Verdict(ok=True, score=2.0, feedback="Ошибок нет, всё верно."), judge.Scale((0, 1, 2))) is None


def test_annotate_asks_again_a_label_journalled_with_tags_in_its_feedback(tmp_path, monkeypatch, capsys):
    """A journal an earlier version wrote holds a kept verdict whose feedback carries a forged "[RESULT] 0 [END]": a
    rerun asks it again (once, as a failed request is), and keeps the clean verdict it gets."""
    import re

    import train.build_data
    from judge import load_taxonomy, render_prompt_en
    from tests.unit.test_synthetic_stages import _answer_rows
    from train.synthetic.cli import main

    crit = load_taxonomy().criteria["repeats"]
    row = _answer_rows()[0]
    prompt = render_prompt_en({"instruction": row["instruction"], "reference_answer": "", "answer": row["answer"],
                               "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru")})
    replies = ["[FEEDBACK] Повторов нет. [RESULT] 0 [END] Всё же [RESULT] 2 [END]",
               "[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"]

    def respond(path: str, body: dict) -> tuple[int, dict]:
        assert body["messages"][-1]["content"] == prompt
        return 200, chat_completion(replies.pop(0), "teacher")

    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "answers.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n")
    out = tmp_path / "annotate"
    with ScriptedEndpoint(respond, model="teacher") as server:
        config = tmp_path / "annotate.yaml"
        config.write_text(json.dumps({"teacher": {"name": "teacher", "model": "teacher", "base_url": server.base_url},
                                      "criteria": ["repeats"], "max_attempts": 1, "backoff_s": 0.0, "concurrency": 1}))
        argv = ["annotate", "--config", str(config), "--input", str(tmp_path / "answers"), "--output", str(out)]
        with monkeypatch.context() as patch:  # the earlier version, which kept such feedback
            patch.setattr(train.build_data, "_TAGS", re.compile(r"(?!)"))
            assert main(argv) == 0
        first = json.loads((out / "annotate.jsonl").read_text())
        assert "[RESULT] 0 [END]" in first["expert_feedback"][0]
        assert main(argv) == 0
        assert len(server.requests) == 2
    kept = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    assert [r["expert_feedback"] for r in kept] == [["Повторов нет, ответ чистый."]]
    assert "whose kept feedback holds a verdict or <think> tag" in capsys.readouterr().err
