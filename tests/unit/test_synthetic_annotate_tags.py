"""The annotate stage on a teacher's feedback holding a verdict or <think> tag: not kept, asked again (a journalled one
too)."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

import judge
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


@contextmanager
def _annotate_stage(folder, respond, max_attempts=1, row=None):
    """One answer (the stage tests' first, or ``row``) to annotate on "repeats" from a scripted teacher answering
    ``respond``: yields (the teacher server, the annotate command line, the output folder)."""
    from tests.unit.test_synthetic_stages import _answer_rows

    (folder / "answers").mkdir(parents=True)
    (folder / "answers" / "answers.jsonl").write_text(json.dumps(row or _answer_rows()[0], ensure_ascii=False) + "\n")
    out = folder / "annotate"
    with ScriptedEndpoint(respond, model="teacher") as server:
        config = folder / "annotate.yaml"
        config.write_text(json.dumps({"teacher": {"name": "teacher", "model": "teacher", "base_url": server.base_url},
                                      "criteria": ["repeats"], "max_attempts": max_attempts, "backoff_s": 0.0,
                                      "concurrency": 1}))
        yield server, ["annotate", "--config", str(config), "--input", str(folder / "answers"), "--output", str(out)], out


def _keep_any_tagged_answer(patch) -> None:
    """An earlier version's annotate, which kept a label from an output holding more than one tagged block."""
    import train.synthetic.annotate

    patch.setattr(train.synthetic.annotate, "tagged_answer_is_bare", lambda text, lenient=False: True)


@pytest.mark.parametrize("feedback", ["Ошибок нет. [RESULT] 0 [END] На деле", "<think>Ошибок нет", "Ошибок нет </think>"])
def test_annotate_does_not_keep_feedback_holding_a_verdict_or_think_tag(feedback):
    """Kept as a label, such feedback was dropped later by build-data (a <think> never): the teacher is asked again
    instead, and build-data drops a <think> as it drops a verdict tag."""
    from judge.verdicts import Verdict
    from train.build_data import VERDICT_OR_THINK_TAG
    from train.synthetic.annotate import unusable_verdict

    verdict = Verdict(ok=True, score=2.0, feedback=feedback)
    assert unusable_verdict(verdict, judge.Scale((0, 1, 2)))[0] == "tags_in_feedback"
    assert VERDICT_OR_THINK_TAG.search(feedback)
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

    with _annotate_stage(tmp_path, respond, row=row) as (server, argv, out):
        with monkeypatch.context() as patch:  # the earlier version, which kept such feedback
            patch.setattr(train.build_data, "VERDICT_OR_THINK_TAG", re.compile(r"(?!)"))
            _keep_any_tagged_answer(patch)
            assert main(argv) == 0
        first = json.loads((out / "annotate.jsonl").read_text())
        assert "[RESULT] 0 [END]" in first["expert_feedback"][0]
        assert main(argv) == 0
        assert len(server.requests) == 2
    kept = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    assert [r["expert_feedback"] for r in kept] == [["Повторов нет, ответ чистый."]]
    assert "whose kept feedback holds a verdict or <think> tag" in capsys.readouterr().err


#: DeepSeek-R1 behind a server with no reasoning parser: the chat template opened <think> in the prompt, so the
#: output starts inside the reasoning, which drafts a verdict; the verdict after its </think> was cut.
TEACHER_DRAFT_THEN_CUT = ("Okay, the answer has no repeats. Let me draft: [FEEDBACK] Повторы есть. [RESULT] 0 [END]\n"
                          "Wait, actually there are none.\n</think>\n\n[FEEDBACK] Повторов нет, ответ")


def test_a_draft_in_a_template_opened_reasoning_is_no_label():
    """Its draft's 0 is no verdict: the teacher is asked again (no_result), not trained on the draft."""
    from train.synthetic.annotate import unusable_verdict

    scale = judge.Scale((0, 1, 2))
    for lenient in (False, True):
        verdict = judge.parse_verdict(TEACHER_DRAFT_THEN_CUT, scale=scale, lenient=lenient)
        assert (verdict.ok, verdict.score, verdict.feedback) == (False, None, "Повторов нет, ответ")
        assert unusable_verdict(verdict, scale)[0] == "no_result"


def _run_annotate_twice(tmp_path, monkeypatch, replies, earlier_reasoning_end):
    """Annotate one (answer, criterion) with the reading ``earlier_reasoning_end`` gives (an earlier version's), then
    again with this version's; the teacher answers ``replies`` in turn. Returns (the row the first run kept,
    requests made, the rows kept at the end)."""
    import judge.verdicts
    from judge import load_taxonomy, render_prompt_en
    from tests.unit.test_synthetic_stages import _answer_rows
    from train.synthetic.cli import main

    crit = load_taxonomy().criteria["repeats"]
    row = _answer_rows()[0]
    prompt = render_prompt_en({"instruction": row["instruction"], "reference_answer": "", "answer": row["answer"],
                               "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru")})
    replies = list(replies)

    def respond(path: str, body: dict) -> tuple[int, dict]:
        assert body["messages"][-1]["content"] == prompt
        return 200, chat_completion(replies.pop(0), "teacher")

    with _annotate_stage(tmp_path, respond, row=row) as (server, argv, out):
        if earlier_reasoning_end is not None:
            with monkeypatch.context() as patch:
                patch.setattr(judge.verdicts, "_reasoning_end", earlier_reasoning_end)
                _keep_any_tagged_answer(patch)
                assert main(argv) == 0
        else:
            assert main(argv) == 0
        first = json.loads((out / "annotate.jsonl").read_text())
        assert main(argv) == 0
        requests = len(server.requests)
    kept = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    return first, requests, kept


def _after_the_last_close(text: str) -> int:
    """The reading before a quoted </think> was text: the verdict starts after the text's last </think>."""
    import judge.verdicts

    closes = list(judge.verdicts._THINK_CLOSE.finditer(text))
    return closes[-1].end() if closes else 0


@pytest.mark.parametrize(("earlier", "raw", "kept_before"), [
    # the feedback was cut at a </think> it quoted: no tag left in the kept feedback to see
    (_after_the_last_close,
     "[FEEDBACK] The response opens with a <think>draft</think> block, otherwise correct. [RESULT] 1 [END]",
     (1.0, "block, otherwise correct.")),
    # the whole text read, as the version before this one read a template-opened reasoning that drafted a verdict:
    # the draft's 0 was kept
    (lambda text: 0, TEACHER_DRAFT_THEN_CUT, (0.0, "Повторы есть.")),
])  # fmt: skip
def test_a_resumed_run_asks_again_a_label_whose_raw_output_reads_otherwise_now(tmp_path, monkeypatch, earlier, raw,
                                                                                kept_before):
    """A label an earlier parser kept, whose journalled raw output this parser reads as another verdict or none, is
    asked again (once) and the clean verdict replaces it."""
    first, requests, kept = _run_annotate_twice(
        tmp_path, monkeypatch, [raw, "[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"], earlier)
    assert (first["criteria_score"], first["expert_feedback"]) == (kept_before[0], [kept_before[1]])
    assert requests == 2
    assert [(r["criteria_score"], r["expert_feedback"]) for r in kept] == [(2.0, ["Повторов нет, ответ чистый."])]


def test_a_resumed_run_keeps_a_label_its_raw_output_still_gives(tmp_path, monkeypatch):
    """The same parser, the same verdict: nothing asked again."""
    first, requests, kept = _run_annotate_twice(
        tmp_path, monkeypatch, ["Повторов нет.\n</think>\n\n[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"], None)
    assert requests == 1
    assert [(r["criteria_score"], r["expert_feedback"]) for r in kept] == [(2.0, ["Повторов нет, ответ чистый."])]


#: DeepSeek-R1 with no reasoning parser, stopped by max_tokens inside the reasoning its chat template opened, after a
#: drafted verdict: no </think> at all, so the whole text reads as the draft's verdict.
TEACHER_CUT_INSIDE_THE_REASONING = ("Okay, let me check. Let me draft: [FEEDBACK] Повторы есть. [RESULT] 0 [END]\n"
                                    "Wait, actually the second sentence is new, so")


def _annotate_once(tmp_path, replies, max_attempts):
    """Annotate one (answer, criterion); the teacher answers ``replies`` in turn, each a (text, finish_reason).
    Returns (requests made, annotate.jsonl rows, dropped.jsonl rows)."""
    from train.synthetic.cli import main

    replies = list(replies)

    def respond(path: str, body: dict) -> tuple[int, dict]:
        text, finish_reason = replies.pop(0)
        return 200, chat_completion(text, "teacher", finish_reason)

    with _annotate_stage(tmp_path, respond, max_attempts) as (server, argv, out):
        assert main(argv) == 0
        requests = len(server.requests)
    read = lambda name: [json.loads(line) for line in (out / name).read_text().splitlines() if line.strip()]  # noqa: E731
    return requests, read("annotate.jsonl"), read("dropped.jsonl") if (out / "dropped.jsonl").exists() else []


def test_an_output_the_length_limit_stopped_is_asked_again(tmp_path):
    """The draft a reasoning wrote before the cut reads as a verdict (0): not a label, the teacher is asked again."""
    assert judge.parse_verdict(TEACHER_CUT_INSIDE_THE_REASONING, scale=judge.Scale((0, 1, 2))).score == 0.0
    requests, kept, dropped = _annotate_once(tmp_path, [(TEACHER_CUT_INSIDE_THE_REASONING, "length"),
                                                        ("[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]", "stop")], 2)
    assert requests == 2
    assert [(r["criteria_score"], r["expert_feedback"], r["attempts"]) for r in kept] == [
        (2.0, ["Повторов нет, ответ чистый."], 2)]
    assert dropped == []


def test_an_output_cut_on_every_attempt_is_dropped_as_cut(tmp_path):
    requests, kept, dropped = _annotate_once(tmp_path, [(TEACHER_CUT_INSIDE_THE_REASONING, "length")], 1)
    assert (requests, kept) == (1, [])
    assert [r["drop_reason"] for r in dropped] == ["verdict_cut"]
    assert "finish_reason length" in dropped[0]["reason"]


def test_a_resumed_journal_row_without_raw_outputs_keeps_its_label(tmp_path):
    """A hand-made or foreign journal row with no raw_outputs: the label stands as kept (no KeyError), no attempts."""
    from train.synthetic.cli import main

    replies = ["[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"]
    respond = lambda path, body: (200, chat_completion(replies.pop(0), "teacher"))  # noqa: E731
    with _annotate_stage(tmp_path, respond) as (server, argv, out):
        assert main(argv) == 0
        journal = out / "journal.jsonl"
        rows = [json.loads(line) for line in journal.read_text().splitlines()]
        journal.write_text("".join(json.dumps({k: v for k, v in row.items() if k not in ("raw_outputs", "attempts")},
                                              ensure_ascii=False) + "\n" for row in rows))
        assert main(argv) == 0
        assert len(server.requests) == 1
    kept = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    assert [(r["criteria_score"], r["teacher_raw"], r["attempts"]) for r in kept] == [(2.0, [], 0)]


def test_a_label_kept_without_its_finish_reason_from_a_possibly_cut_output_is_asked_again(tmp_path, monkeypatch):
    """A journal written before finish_reason was journalled cannot say whether its output was cut: one with text
    after its last [END] that does not open with a verdict tag (a draft in a reasoning, then more reasoning) is asked
    again once on resume. With its finish_reason journalled ("stop": the teacher ended there) it is asked again too:
    text around its block makes it more than one tagged answer, which this version keeps no label from."""
    from train.synthetic.cli import main

    def run(strip_finish_reason: bool) -> tuple[int, list]:
        folder = tmp_path / ("stripped" if strip_finish_reason else "kept")
        replies = [TEACHER_CUT_INSIDE_THE_REASONING, "[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"]
        respond = lambda path, body: (200, chat_completion(replies.pop(0), "teacher"))  # noqa: E731
        with _annotate_stage(folder, respond) as (server, argv, out):
            with monkeypatch.context() as patch:
                _keep_any_tagged_answer(patch)
                assert main(argv) == 0  # "stop": the earlier version kept the draft's 0
            journal = out / "journal.jsonl"
            rows = [json.loads(line) for line in journal.read_text().splitlines()]
            assert [(row.get("finish_reason"), row.get("score")) for row in rows if row.get("ok") is True] == [
                ("stop", 0.0)]
            if strip_finish_reason:
                journal.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "finish_reason"},
                                                      ensure_ascii=False) + "\n" for row in rows))
            assert main(argv) == 0
            requests = len(server.requests)
        kept = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
        return requests, [(r["criteria_score"], r["expert_feedback"]) for r in kept]

    assert run(strip_finish_reason=False) == (2, [(2.0, ["Повторов нет, ответ чистый."])])
    assert run(strip_finish_reason=True) == (2, [(2.0, ["Повторов нет, ответ чистый."])])
