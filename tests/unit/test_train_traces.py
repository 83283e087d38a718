"""The traces stage (`judge-train data traces`): a thinking teacher judges each training item k times in the integer
format; traces agreeing with the experts' mode are kept, the rest counted by reason; resumable through its journal.

The teacher is ``tests.support.scripted_endpoint.ScriptedEndpoint``, a real HTTP server on 127.0.0.1 answering from a script
keyed by the prompt: the network boundary, whose exact payloads the tests assert.

Run: .venv/bin/python -m pytest tests/unit/test_train_traces.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.cli import main
from train.synthetic.traces import experts_reference

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"
BASE = {"reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
#: A: experts 2, 2, 1 (mode 2). B: one expert, 1 (mode 1). C: experts 0 and 2 (two modes).
RECORDS = [
    {"id": "A", "instruction": "Исправьте: «Я пошол домой.»", "answer": "Я пошёл домой.", "expert_scores": [2, 2, 1], **BASE},
    {"id": "B", "instruction": "Исправьте: «Мы ушли не попрощавшись.»", "answer": "Мы ушли.", "expert_scores": [1], **BASE},
    {"id": "C", "instruction": "Исправьте: «Он сказал сказал.»", "answer": "Он сказал.", "expert_scores": [0, 2], **BASE},
]
MODEL = "Pollux-4B-Judge"


def reply(content: str, reasoning: str | None = None, finish: str = "stop") -> dict:
    """A chat completion as vLLM's reasoning parser returns it (reasoning apart) or, without reasoning, inline."""
    body = chat_completion(content, MODEL, finish)
    if reasoning is not None:
        body["choices"][0]["message"]["reasoning"] = reasoning
    return body


#: The teacher's four answers per item, in order (concurrency 1 keeps the order). By hand, tolerance 0:
#: A (mode 2): "2" kept, "1" disagrees, inline "<think>..</think> 2" kept, "5" out of scale (the rubric is 0-2).
#: B (mode 1): "1" kept, a generation cut inside <think> fails (verdict_unclosed_think), a 500 fails
#: (request_failed, no retries), "1" with no reasoning is dropped (no_reasoning).
#: C has two modes (0 and 2): with no_unique_mode skip it is never asked.
#: Traces: 2 items x 4 = 8 = kept 3 + dropped 3 + failed 2.
SCRIPT = {
    "A": [reply("2", "Ошибка исправлена, других нет."), reply("1", "Есть сомнения."),
          reply("<think>\nВсё исправлено.\n</think>\n\n2"), reply("5", "Отлично.")],
    "B": [reply("1", "Запятая пропущена."), reply("<think>\nДумаю о запятых", finish="length"), 500,
          reply("1")],
    "C": [reply("0", "Повтор остался."), reply("2", "Повтора нет."), reply("0", "Повтор есть."),
          reply("1", "Это спорно.")],
}


class Teacher(ScriptedEndpoint):
    """The scripted teacher: the answers of SCRIPT for the item whose judge prompt it receives, in order."""

    def __init__(self):
        prompts = {judge.render_prompt({**row, "reference_answer": ""}): row["id"] for row in RECORDS}
        self.left = {item: list(answers) for item, answers in SCRIPT.items()}

        def respond(path: str, body: dict):
            item = prompts[body["messages"][-1]["content"]]
            answer = self.left[item].pop(0)
            if isinstance(answer, int):
                return answer, {"error": {"message": "scripted failure", "type": "server_error"}}
            return 200, answer

        super().__init__(respond, model=MODEL)


@pytest.fixture
def teacher():
    with Teacher() as server:
        yield server


def write_inputs(tmp_path: Path, rows=RECORDS) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def write_config(tmp_path: Path, url: str, max_tokens: int = 256, **overrides) -> Path:
    teacher = {"name": "pollux-4b", "model": MODEL, "base_url": url, "temperature": 0.6, "max_tokens": max_tokens,
               "extra_body": {"top_p": 0.95}}  # fmt: skip
    config = {"teacher": teacher, "samples_per_item": 4, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0,
              **overrides}  # fmt: skip
    path = tmp_path / "traces.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    return path


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_experts_reference_mode_median_mean():
    """The mode (all modes when tied, ascending), the median and the mean of the experts' scores."""
    assert experts_reference([2, 2, 1], "mode") == (2.0,)
    assert experts_reference([0, 2], "mode") == (0.0, 2.0)
    assert experts_reference([0, 1, 2, 2], "median") == (1.5,)  # (1 + 2) / 2
    assert experts_reference([2, 2, 1], "mean") == (5 / 3,)


def test_traces_kept_dropped_and_failed_by_reason(teacher, tmp_path, capsys):
    """The counts derived by hand in SCRIPT, in summary.json and on stdout; every request is the Russian judge prompt
    as one user turn with the teacher's settings; kept rows carry the trace and its integer."""
    out = tmp_path / "traces"
    argv = ["traces", "--config", str(write_config(tmp_path, teacher.base_url)), "--input", str(write_inputs(tmp_path)),
            "--output", str(out)]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped"], summary["failed"], summary["traces"]) == (3, 3, 2, 8)
    assert summary["dropped_by_reason"] == {"disagrees": 1, "no_reasoning": 1, "out_of_scale": 1}
    assert summary["failed_by_reason"] == {"request_failed": 1, "verdict_unclosed_think": 1}
    assert summary["skipped_items_by_reason"] == {"no_unique_mode": 1}
    assert (summary["items"], summary["items_with_a_kept_trace"]) == (2, 2)
    assert capsys.readouterr().out.strip() == (
        f"traces: kept 3, dropped 3 (disagrees 1, no_reasoning 1, out_of_scale 1), failed 2 (request_failed 1, "
        f"verdict_unclosed_think 1); items not asked 1 (no_unique_mode 1) -> {out}")

    bodies = teacher.bodies("/v1/chat/completions")
    assert len(bodies) == 8  # C never asked
    record_a = {**RECORDS[0], "reference_answer": ""}
    assert bodies[0] == {"model": MODEL, "messages": [{"role": "user", "content": judge.render_prompt(record_a)}],
                         "temperature": 0.6, "max_tokens": 256, "top_p": 0.95}  # fmt: skip

    kept = jsonl(out / "traces.jsonl")
    assert [(row["id"], row["item_id"], row["reasoning"], row["reasoning_score"]) for row in kept] == [
        ("A#0", "A", "Ошибка исправлена, других нет.", 2), ("A#2", "A", "Всё исправлено.", 2),
        ("B#0", "B", "Запятая пропущена.", 1)]  # fmt: skip
    assert kept[0]["expert_scores"] == [2, 2, 1] and kept[0]["experts_reference"] == [2.0]
    assert sorted(row["id"] for row in jsonl(out / "failed.jsonl")) == ["B#1", "B#2"]
    assert [row["id"] for row in jsonl(out / "skipped.jsonl")] == ["C"]
    run = json.loads((out / "run.json").read_text())
    assert run["prompt_version"] == judge.PROMPT_VERSION and run["config"]["samples_per_item"] == 4


def test_a_trace_of_one_word_gives_no_reasons_and_a_cut_answer_no_verdict():
    """trace_outcome: a reasoning of one word (or one character) is no reasoning, by the rule of the integer-format
    rows and the GRPO format reward (judge.verdicts.gives_reasons); an answer stopped by max_tokens after its
    reasoning closed (finish_reason length) holds wherever the cut fell, not a verdict: failed, verdict_cut, though
    its "1" agrees. Cut inside the reasoning it stays verdict_unclosed_think."""
    from train.synthetic.traces import trace_outcome

    scale = judge.Scale((0, 1, 2))

    def outcome(content, reasoning, finish="stop"):
        done = {"ok": True, "content": content, "reasoning": reasoning, "finish_reason": finish, "error": None}
        return trace_outcome(done, scale, (1.0,), 0.0)[:2]

    assert outcome("1", "Запятая пропущена.") == ("kept", "agrees")
    assert outcome("1", "Запятая.") == ("dropped", "no_reasoning")
    assert outcome("<think>.</think>1", None) == ("dropped", "no_reasoning")
    assert outcome("1", "Запятая пропущена.", finish="length") == ("failed", "verdict_cut")
    assert outcome("<think>\nДумаю о запятых", None, finish="length") == ("failed", "verdict_unclosed_think")
    # a journal row written before finish_reason was journalled reads as not cut
    done = {"ok": True, "content": "1", "reasoning": "Запятая пропущена.", "error": None}
    assert trace_outcome(done, scale, (1.0,), 0.0)[:2] == ("kept", "agrees")


def test_an_answer_that_is_more_than_the_integer_is_dropped_as_answer_not_bare():
    """The serving parser reads the integer that ends an answer: "Оценка 1 из 2" reads as 2, so a trace arguing for 1
    agreed with experts whose mode is 2 and was kept as a trace for 2. The stage keeps a trace only when the answer
    after its reasoning is a bare integer (whitespace around it allowed): every other answer, inline after its
    </think> too, is dropped as answer_not_bare, whatever integer it ends in; the parser still reads it as 2."""
    from train.synthetic.traces import bare_answer, trace_outcome

    scale = judge.Scale((0, 1, 2))
    reasoning = "Ответ содержит одну ошибку, значит оценка 1."

    def outcome(content, reasoning=reasoning):
        done = {"ok": True, "content": content, "reasoning": reasoning, "finish_reason": "stop", "error": None}
        return trace_outcome(done, scale, (2.0,), 0.0)[:2]

    assert judge.parse_integer_verdict("Оценка 1 из 2", reasoning, scale).score == 2.0  # serving reads it so, still
    for content in ("Оценка 1 из 2", "1/2", "Итоговая оценка: 1. По шкале от 0 до 2", "Оценка: 2"):
        assert outcome(content) == ("dropped", "answer_not_bare"), content
    assert outcome(f"<think>\n{reasoning}\n</think>\n\nОценка 1 из 2", None) == ("dropped", "answer_not_bare")
    assert outcome(" 2\n") == ("kept", "agrees")
    assert outcome(f"<think>\n{reasoning}\n</think>\n\n2", None) == ("kept", "agrees")
    assert [bare_answer(text) for text in ("2", "-1", "\u22121", "+2", "2.", "2 2", "", None)] == [
        True, True, True, True, False, False, False, False]


def test_a_score_between_the_rubric_s_levels_is_dropped_as_score_not_a_level():
    """On a rubric with levels 0, 1 and 3, an answer of 2 lies within its range but is no level: with the experts'
    3 and tolerance 1 it agreed and was kept. Dropped as score_not_a_level (build-data's name); 3 is kept."""
    from train.synthetic.traces import trace_outcome

    scale = judge.oriented_scale("Грамотность", "0: плохо\n\n1: средне\n\n3: отлично")
    assert scale.levels == (0, 1, 3)

    def outcome(content):
        done = {"ok": True, "content": content, "reasoning": "Ответ хороший, но не безупречный.",
                "finish_reason": "stop", "error": None}  # fmt: skip
        return trace_outcome(done, scale, (3.0,), 1.0)[:2]

    assert outcome("2") == ("dropped", "score_not_a_level")
    assert outcome("3") == ("kept", "agrees")


def test_the_stage_drops_the_traces_the_sft_recipe_would_drop():
    """train.seq2seq.integer_rows drops a reasoning under min_russian_share Cyrillic (not_russian) and one holding a
    think tag (think_tags_in_reasoning); the stage drops them too, with the recipe's default share, so that no such
    trace is kept for SFT to throw away."""
    import dataclasses

    from train.config import Seq2SeqConfig
    from train.synthetic.config import TracesConfig
    from train.synthetic.traces import MIN_RUSSIAN_SHARE, trace_outcome

    assert MIN_RUSSIAN_SHARE == next(f.default for f in dataclasses.fields(Seq2SeqConfig)
                                     if f.name == "min_russian_share") == 0.5  # fmt: skip
    assert TracesConfig().min_russian_share == MIN_RUSSIAN_SHARE  # the stage's setting, by default the recipe's
    scale = judge.Scale((0, 1, 2))

    def outcome(reasoning, **kwargs):
        done = {"ok": True, "content": "2", "reasoning": reasoning, "finish_reason": "stop", "error": None}
        return trace_outcome(done, scale, (2.0,), 0.0, **kwargs)[:2]

    english = "The spelling is fixed, no errors remain."
    assert outcome(english) == ("dropped", "not_russian")
    assert outcome(english, min_russian_share=0.0) == ("kept", "agrees")
    assert outcome("Думаю </think> ошибок нет") == ("dropped", "think_tags_in_reasoning")
    assert outcome("Ошибка исправлена, других нет.") == ("kept", "agrees")


def test_the_item_cap_counts_only_traces_sft_trains_on(teacher, tmp_path):
    """max_kept_per_item 1: the item's one place went to its first agreeing trace, an English one (or one whose
    answer "Оценка 1 из 2" read as 2), the Russian trace after it dropped as over_item_cap, and SFT then dropped the
    English one: the item trained nothing. Both are dropped now before the cap, and the Russian trace is kept and
    trained on."""
    from train.build_data import load_training_records
    from train.seq2seq import integer_rows

    teacher.left["A"] = [reply("Оценка 1 из 2", "Ошибка есть, ставлю 1 балл."),
                         reply("2", "The spelling is fixed, no errors remain."),
                         reply("2", "Ошибка исправлена, других нет.")]  # fmt: skip
    out = tmp_path / "traces"
    config = write_config(tmp_path, teacher.base_url, samples_per_item=3, max_kept_per_item=1)
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path, RECORDS[:1])), "--output",
                 str(out)]) == 0  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (1, {"answer_not_bare": 1, "not_russian": 1})
    assert [(row["id"], row["drop_reason"]) for row in jsonl(out / "dropped.jsonl")] == [
        ("A#0", "answer_not_bare"), ("A#1", "not_russian")]
    rows, report = integer_rows(load_training_records(str(out / "traces.jsonl")))
    assert [(row["id"], row["completion"]) for row in rows] == [
        ("A#2", "<think>\nОшибка исправлена, других нет.\n</think>\n\n2")]
    assert not report.dropped


def test_the_stages_min_russian_share_is_the_configs(teacher, tmp_path):
    """A run whose SFT keeps English reasoning (min_russian_share 0) sets the stage's min_russian_share to 0 too:
    the English trace is then kept (it agrees with the label 2), and a share above 1 is refused at load."""
    teacher.left["A"] = [reply("2", "The spelling is fixed, no errors remain.")]
    out = tmp_path / "traces"
    config = write_config(tmp_path, teacher.base_url, samples_per_item=1, min_russian_share=0.0)
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path, RECORDS[:1])), "--output",
                 str(out)]) == 0  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (1, {})
    bad = write_config(tmp_path, teacher.base_url, min_russian_share=1.5)
    assert main(["traces", "--config", str(bad), "--input", str(write_inputs(tmp_path, RECORDS[:1])), "--output",
                 str(tmp_path / "bad")]) == 2  # fmt: skip


def test_cut_and_one_word_traces_are_counted(teacher, tmp_path):
    """Through the stage: B's answer cut after its reasoning is counted failed (verdict_cut), its one-word trace
    dropped (no_reasoning); neither is kept."""
    teacher.left["B"] = [reply("1", "Запятая пропущена.", finish="length"), reply("1", "Запятая.")]
    out = tmp_path / "traces"
    config = write_config(tmp_path, teacher.base_url, samples_per_item=2)
    rows = [RECORDS[1]]
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path, rows)), "--output",
                 str(out)]) == 0  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["failed_by_reason"], summary["dropped_by_reason"]) == (
        0, {"verdict_cut": 1}, {"no_reasoning": 1})
    assert [(row["id"], row["finish_reason"]) for row in jsonl(out / "failed.jsonl")] == [("B#0", "length")]


def test_kept_traces_are_integer_sft_rows(teacher, tmp_path):
    """traces.jsonl is training data for the seq2seq recipe's integer format as it is: loaded as build-data loads
    records, each kept trace becomes one row whose target is <think> reasoning </think> then the integer."""
    from train.build_data import load_training_records
    from train.seq2seq import integer_rows

    out = tmp_path / "traces"
    assert main(["traces", "--config", str(write_config(tmp_path, teacher.base_url)), "--input",
                 str(write_inputs(tmp_path)), "--output", str(out)]) == 0  # fmt: skip
    rows, report = integer_rows(load_training_records(str(out / "traces.jsonl")))
    assert [(row["record_id"], row["completion"]) for row in rows] == [
        ("A", "<think>\nОшибка исправлена, других нет.\n</think>\n\n2"),
        ("A", "<think>\nВсё исправлено.\n</think>\n\n2"),
        ("B", "<think>\nЗапятая пропущена.\n</think>\n\n1")]  # fmt: skip
    assert report.n_rows == 3 and not report.dropped


def test_no_unique_mode_any_and_tolerance_and_item_cap(teacher, tmp_path):
    """Tolerance 1 keeps A's "1" (|1 - 2| = 1), and max_kept_per_item 2 drops A's third agreeing trace as
    over_item_cap; B (mode 1) and C (modes 0 and 2 under any) it leaves unasked, every level of 0..2 lying within 1
    point of a reference (tolerance_admits_every_level). At tolerance 0, no_unique_mode any asks C and keeps a trace
    equal to either mode (0, 2, 0 of 0, 2, 0, 1; the second 0 over the cap)."""
    out = tmp_path / "traces"
    config = write_config(tmp_path, teacher.base_url, no_unique_mode="any", tolerance=1.0, max_kept_per_item=2)
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path)), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    # A: 2 kept, 1 kept, 2 over the cap, 5 out of scale.
    assert (summary["kept"], summary["traces"]) == (2, 4)
    assert summary["dropped_by_reason"] == {"out_of_scale": 1, "over_item_cap": 1}
    assert summary["skipped_items_by_reason"] == {"tolerance_admits_every_level": 2}
    assert [row["id"] for row in jsonl(out / "traces.jsonl")] == ["A#0", "A#1"]

    teacher.left.update({item: list(answers) for item, answers in SCRIPT.items()})
    out = tmp_path / "exact"
    config = write_config(tmp_path, teacher.base_url, no_unique_mode="any", max_kept_per_item=2)
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path)), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["traces"]) == (5, 12)
    assert summary["dropped_by_reason"] == {"disagrees": 2, "no_reasoning": 1, "out_of_scale": 1, "over_item_cap": 1}
    assert [row["id"] for row in jsonl(out / "traces.jsonl")] == ["A#0", "A#2", "B#0", "C#0", "C#1"]


def test_retuning_and_resuming_reuse_the_journal(teacher, tmp_path):
    """A run limited to the first item, then the full run: only B's four traces are asked. A rerun with another
    item cap asks again only the trace whose request failed (the outage was not the teacher's answer) and
    re-decides the rest from the journal. A journal line torn by a kill is asked again, alone."""
    inputs = write_inputs(tmp_path)
    config = write_config(tmp_path, teacher.base_url)
    out = tmp_path / "traces"
    argv = ["traces", "--config", str(config), "--input", str(inputs), "--output", str(out)]
    assert main([*argv, "--limit", "1"]) == 0
    assert len(teacher.requests) == 4 and json.loads((out / "summary.json").read_text())["kept"] == 2
    assert main(argv) == 0
    assert len(teacher.requests) == 8 and json.loads((out / "summary.json").read_text())["kept"] == 3

    teacher.left["B"] = [reply("1")]  # what B's trace whose request failed (the 500) gets when asked again
    assert main([*argv, "--max-kept-per-item", "1"]) == 0
    assert len(teacher.requests) == 9
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kept"] == 2  # A's second "2" over the cap; B's re-asked "1" has no reasoning: dropped
    assert "request_failed" not in summary.get("failed_by_reason", {})

    lines = (out / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    torn = json.loads(lines[-1])["key"]
    (out / "journal.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20], encoding="utf-8")
    teacher.left["B"] = [reply("1")]  # what the re-asked trace gets (B's script is spent)
    assert main(argv) == 0
    assert len(teacher.requests) == 10
    keys = [json.loads(line)["key"] for line in (out / "journal.jsonl").read_text().splitlines()]
    assert keys.count(torn) == 2 and len(keys) == 9  # its failed row of the first run, then its answer


#: A and B asked twice each at max_tokens 64: A's two answers finish (kept, disagrees); B's first is kept, its second
#: is cut inside its reasoning by the limit (verdict_unclosed_think, finish_reason length).
CUT_SCRIPT = {
    "A": [reply("2", "Ошибка исправлена, других нет."), reply("1", "Есть сомнения.")],
    "B": [reply("1", "Запятая пропущена."), reply("<think>\nДумаю о запятых", finish="length")],
}


def run_cut(teacher, tmp_path: Path, max_tokens: int, argv_tail=()) -> tuple[int, list[str]]:
    """The traces stage on A and B, two samples each, with the teacher's max_tokens; returns (exit, argv)."""
    argv = ["traces", "--config", str(write_config(tmp_path, teacher.base_url, max_tokens=max_tokens,
                                                   samples_per_item=2)),
            "--input", str(write_inputs(tmp_path, RECORDS[:2])), "--output", str(tmp_path / "traces"), *argv_tail]
    return main(argv), argv


def test_raising_max_tokens_asks_again_only_the_cut_trace(teacher, tmp_path, capsys):
    """A trace cut at max_tokens 64, then a rerun into the same folder at 256: the resume is not refused (the cap is
    not in the run key), exactly B#1 is asked again, with max_tokens 256, and the other three are reused; the newer
    answer wins and the summary counts one cut trace asked again."""
    teacher.left.update({item: list(answers) for item, answers in CUT_SCRIPT.items()})
    out = tmp_path / "traces"
    assert run_cut(teacher, tmp_path, 64)[0] == 0
    assert [body["max_tokens"] for body in teacher.bodies("/v1/chat/completions")] == [64, 64, 64, 64]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["failed_by_reason"], summary["cut_traces_asked_again"]) == (
        2, {"verdict_unclosed_think": 1}, 0)
    assert {json.loads(line)["key"]: json.loads(line)["max_tokens"] for line in
            (out / "journal.jsonl").read_text().splitlines()} == {"A#0": 64, "A#1": 64, "B#0": 64, "B#1": 64}
    capsys.readouterr()

    teacher.left["B"] = [reply("1", "Запятая пропущена, других ошибок нет.")]  # B#1's answer with room to finish
    assert run_cut(teacher, tmp_path, 256)[0] == 0
    bodies = teacher.bodies("/v1/chat/completions")
    assert len(bodies) == 5
    record_b = {**RECORDS[1], "reference_answer": ""}
    assert bodies[4] == {"model": MODEL, "messages": [{"role": "user", "content": judge.render_prompt(record_b)}],
                         "temperature": 0.6, "max_tokens": 256, "top_p": 0.95}  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["failed"], summary["cut_traces_asked_again"]) == (3, 0, 1)
    assert [row["id"] for row in jsonl(out / "traces.jsonl")] == ["A#0", "B#0", "B#1"]
    said = capsys.readouterr()
    assert said.out.strip() == f"traces: kept 3, dropped 1 (disagrees 1), failed 0 (none); cut traces asked again 1 -> {out}"
    assert "asking again the 1 journalled jobs whose answer a smaller max_tokens cut (now 256)" in said.err
    rows = jsonl(out / "journal.jsonl")
    assert [(row["key"], row["max_tokens"], row["finish_reason"]) for row in rows[4:]] == [("B#1", 256, "stop")]
    assert json.loads((out / "run_key.json").read_text())["teacher"] == {
        "model": MODEL, "temperature": 0.6, "extra_body": {"top_p": 0.95}}  # every teacher field but the cap


def test_rerunning_at_the_same_or_a_smaller_max_tokens_asks_nothing(teacher, tmp_path):
    """The cut trace is not paid for again to be cut again: a rerun at the max_tokens that cut it asks nothing, nor
    does one at a smaller cap (which resumes, the cap being out of the run key); neither counts a trace asked again."""
    teacher.left.update({item: list(answers) for item, answers in CUT_SCRIPT.items()})
    out = tmp_path / "traces"
    assert run_cut(teacher, tmp_path, 64)[0] == 0
    for max_tokens in (64, 32):
        assert run_cut(teacher, tmp_path, max_tokens)[0] == 0
        summary = json.loads((out / "summary.json").read_text())
        assert (summary["failed_by_reason"], summary["cut_traces_asked_again"]) == ({"verdict_unclosed_think": 1}, 0)
    assert len(teacher.requests) == 4
    assert len((out / "journal.jsonl").read_text().splitlines()) == 4


def test_a_cut_trace_journalled_before_max_tokens_was_is_asked_again_once(teacher, tmp_path):
    """A folder written before rows recorded their max_tokens: its run key held the teacher's max_tokens, and its rows
    say nothing of theirs. The rerun at the same cap resumes (the stored key is read without the cap) and asks again,
    once, the two traces cut by the limit: B#0 (verdict_cut: finish_reason length after the reasoning closed) and B#1
    (cut inside its reasoning, journalled before finish_reason was); A's are reused (A#0, also without its
    finish_reason, kept as before). B#0's answer is cut again, but it
    now records max_tokens 64, so the next rerun at 64 asks nothing."""
    teacher.left.update({"A": list(CUT_SCRIPT["A"]),
                         "B": [reply("1", "Запятая пропущена.", finish="length"), reply("<think>\nДумаю о запятых")]})
    out = tmp_path / "traces"
    assert run_cut(teacher, tmp_path, 64)[0] == 0
    legacy = []
    for row in jsonl(out / "journal.jsonl"):
        row.pop("max_tokens", None)
        if row["key"] in ("A#0", "B#1"):  # journalled before finish_reason was: B#1 cut, A#0 finished and kept
            row.pop("finish_reason")
        legacy.append(row)
    (out / "journal.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in legacy),
                                       encoding="utf-8")  # fmt: skip
    key = json.loads((out / "run_key.json").read_text())
    key["teacher"]["max_tokens"] = 64  # as the key was written before the cap left it
    (out / "run_key.json").write_text(json.dumps(key, indent=2) + "\n", encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed_by_reason"] == {"verdict_cut": 1, "verdict_unclosed_think": 1}

    teacher.left["B"] = [reply("1", "Запятая пропущена.", finish="length"), reply("1", "Запятая пропущена, всё.")]
    assert run_cut(teacher, tmp_path, 64)[0] == 0
    bodies = teacher.bodies("/v1/chat/completions")
    record_b = judge.render_prompt({**RECORDS[1], "reference_answer": ""})
    assert [(body["messages"][-1]["content"], body["max_tokens"]) for body in bodies[4:]] == [(record_b, 64)] * 2
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["cut_traces_asked_again"], summary["failed_by_reason"], summary["kept"]) == (2, {"verdict_cut": 1}, 2)
    assert "max_tokens" not in json.loads((out / "run_key.json").read_text())["teacher"]

    assert run_cut(teacher, tmp_path, 64)[0] == 0
    assert len(teacher.requests) == 6
    assert json.loads((out / "summary.json").read_text())["cut_traces_asked_again"] == 0


#: D: experts above the 0..2 rubric (a 3 is off the scale); E: an expert between its levels.
OFF_RUBRIC = [
    {"id": "D", "instruction": "Исправьте: «Ихний дом.»", "answer": "Их дом.", "expert_scores": [3, 3, 2],
     **BASE},
    {"id": "E", "instruction": "Исправьте: «Ложи на стол.»", "answer": "Клади на стол.", "expert_scores": [1.5, 2],
     **BASE},
]


@pytest.mark.parametrize("agreement", ["mode", "median", "mean"])
def test_an_item_whose_experts_score_off_the_rubric_is_not_asked(agreement, tmp_path):
    """Experts' scores 3, 3, 2 on a 0..2 rubric made the reference 3 (mode, median) or 8/3 (mean), and 1.5, 2 the
    tied modes 1.5 and 2 or a 1.75 (median, mean): a trace agreeing with them was kept against a reference off the
    rubric or between its levels. Such an item is not asked, for GRPO's reasons (score_out_of_scale,
    score_not_a_level); B is."""
    from train.synthetic.config import TracesConfig
    from train.synthetic.traces import training_records

    config = TracesConfig(teacher={"model": MODEL}, agreement=agreement)
    items, skipped = training_records(write_inputs(tmp_path, [*OFF_RUBRIC, RECORDS[1]]), config)
    assert [(record.id, references) for record, _, references in items] == [("B", (1.0,))]
    assert [(record.id, reason) for record, reason in skipped] == [("D", "score_out_of_scale"),
                                                                    ("E", "score_not_a_level")]


def test_items_off_the_rubric_are_counted_in_the_summary(teacher, tmp_path):
    """Through the stage: D and E are never asked, and are counted and listed in skipped.jsonl by reason."""
    out = tmp_path / "traces"
    argv = ["traces", "--config", str(write_config(tmp_path, teacher.base_url)), "--input",
            str(write_inputs(tmp_path, [*OFF_RUBRIC, RECORDS[1]])), "--output", str(out)]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped_items_by_reason"] == {"score_not_a_level": 1, "score_out_of_scale": 1}
    assert (summary["items"], summary["traces"], summary["skipped_items"]) == (1, 4, 2)
    assert len(teacher.bodies("/v1/chat/completions")) == 4  # B's four samples only
    assert [(row["id"], row["skip_reason"]) for row in jsonl(out / "skipped.jsonl")] == [
        ("D", "score_out_of_scale"), ("E", "score_not_a_level")]


def test_zero_shot_and_benchmark_rows_are_refused_as_build_data_refuses_them(teacher, tmp_path, capsys):
    """A Zero-Shot item stops the stage (exit 2, build-data's message) before any request; zero_shot drop skips it and
    counts it. Rows in the released benchmark's schema are refused as build-data refuses them."""
    held_out = sorted(judge.load_split_spec().task_types)[0]
    rows = [*RECORDS[:1], {**RECORDS[1], "id": "Z", "task_type": held_out}]
    config = write_config(tmp_path, teacher.base_url)
    argv = ["traces", "--config", str(config), "--input", str(write_inputs(tmp_path, rows)), "--output",
            str(tmp_path / "refused")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Zero-Shot test" in err and ": Z;" in err and "zero_shot: drop" in err
    assert teacher.requests == []

    out = tmp_path / "dropped"
    assert main([*argv[:-1], str(out), "--zero-shot", "drop", "--limit", "1"]) == 0
    assert json.loads((out / "summary.json").read_text())["skipped_items_by_reason"] == {"zero_shot": 1}

    released = tmp_path / "released.jsonl"
    released.write_text(json.dumps({**{k: v for k, v in RECORDS[0].items() if k not in ("id", "expert_scores")},
                                    "annotations": [{"comment": "Хорошо.", "score": 2}]}, ensure_ascii=False) + "\n",
                        encoding="utf-8")  # fmt: skip
    assert main(["traces", "--config", str(config), "--input", str(released), "--output", str(tmp_path / "b")]) == 2
    assert "released POLLUX benchmark" in capsys.readouterr().err
    assert len(teacher.requests) == 4  # only the drop run's first item


def test_zero_shot_rows_are_those_of_the_split_file_given(teacher, tmp_path, capsys):
    """``split_file`` names the split the stage refuses by, as judge-train's own: a split holding out only the task
    type of A and B (Standard under the packaged split, which the stage accepts above) stops the stage before any
    request, naming both; a split file that is not there stops it naming the setting, with no folder made."""
    held_out = RECORDS[1]["task_type"]
    assert held_out not in judge.load_split_spec().task_types
    split = tmp_path / "split.yaml"
    split.write_text(f"version: mine\ntask_types:\n  - {held_out}\ncriteria: []\n", encoding="utf-8")
    config = write_config(tmp_path, teacher.base_url)
    argv = ["traces", "--config", str(config), "--input", str(write_inputs(tmp_path, RECORDS[:2])), "--output",
            str(tmp_path / "refused"), "--split-file", str(split)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "2 items belong to the Zero-Shot test" in err and ": A, B;" in err
    assert teacher.requests == []

    assert main([*argv[:-3], str(tmp_path / "never"), "--split-file", str(tmp_path / "missing.yaml")]) == 2
    assert "traces: split_file:" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
    assert teacher.requests == []


def test_shipped_traces_config_parses_and_names_its_command(capsys):
    """configs/data/traces.yaml parses (teacher: judge-serve's Pollux-4B-Judge, k = 4, mode, tolerance 0) and starts
    with the command that runs it; --help lists the stage's flags."""
    from train.synthetic.config import TracesConfig, load_config

    path = Path(__file__).resolve().parents[2] / "configs" / "data" / "traces.yaml"
    config = load_config(TracesConfig, path)
    assert (config.teacher["model"], config.samples_per_item, config.agreement, config.tolerance,
            config.no_unique_mode, config.zero_shot) == ("Pollux-4B-Judge", 4, "mode", 0.0, "skip", "refuse")  # fmt: skip
    assert path.read_text().startswith("# judge-train data traces --config configs/data/traces.yaml")
    with pytest.raises(SystemExit) as exit_info:
        main(["traces", "--help"])
    assert exit_info.value.code == 0 and "--samples-per-item" in capsys.readouterr().out
    with pytest.raises(ValueError, match="samples_per_item"):
        TracesConfig(samples_per_item=0)
    assert main(["traces", "--input", "x.jsonl", "--output", "out", "--samples-per-item", "0"]) == 2
    assert "samples_per_item must be at least 1, got 0" in capsys.readouterr().err


def test_kept_rows_carry_their_rule_and_train_alike_from_every_copy(teacher, tmp_path):
    """A stage run with tolerance 1 keeps A's "1" (|1 - 2| = 1). Every kept row records the rule it was kept by
    (experts_reference, agreement, tolerance), so traces.jsonl, the stage's dataset/ folder (summary.json lies in
    its parent, not in it) and a copy of traces.jsonl with no summary.json beside it train the same three rows,
    where the default tolerance 0 would drop A's "1" as disagrees."""
    import shutil

    from train.build_data import load_training_records
    from train.seq2seq import integer_rows

    out = tmp_path / "traces"
    config = write_config(tmp_path, teacher.base_url, tolerance=1.0)
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path)), "--output", str(out)]) == 0
    kept = jsonl(out / "traces.jsonl")
    assert [(row["id"], row["agreement"], row["tolerance"], row["experts_reference"]) for row in kept] == [
        ("A#0", "mode", 1.0, [2.0]), ("A#1", "mode", 1.0, [2.0]), ("A#2", "mode", 1.0, [2.0])]  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(out / "traces.jsonl", elsewhere / "mine.jsonl")
    for source in (out / "traces.jsonl", out / "dataset", elsewhere / "mine.jsonl"):
        rows, report = integer_rows(load_training_records(str(source)), source=str(source))
        assert [row["id"] for row in rows] == ["A#0", "A#1", "A#2"], source
        assert not report.dropped, source


def test_a_seeded_teacher_gets_a_seed_per_sample_and_duplicate_traces_are_dropped(teacher, tmp_path):
    """A teacher configured with a seed was sent the same body k times and, seeded, gave one trace k times, all kept
    (k requests paid for one example, trained k times over). Sample i is now asked with seed + i; and the same trace
    twice in one item (here the teacher still answers alike, inline or apart) is kept once, the copies counted as
    duplicate_trace. A journal whose samples were all asked with the configured seed asks samples 1..k-1 again."""
    import hashlib

    same = "Ошибка исправлена, других нет."
    teacher.left["A"] = [reply("2", same), reply("2", same), reply(f"<think>\n{same}\n</think>\n\n2"),
                         reply("1", "Есть сомнения.")]  # fmt: skip
    config = json.loads(write_config(tmp_path, teacher.base_url).read_text())
    config["teacher"]["extra_body"] = {"top_p": 0.95, "seed": 7}
    (tmp_path / "traces.yaml").write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "traces"
    argv = ["traces", "--config", str(tmp_path / "traces.yaml"), "--input", str(write_inputs(tmp_path, RECORDS[:1])),
            "--output", str(out)]  # fmt: skip
    assert main(argv) == 0
    bodies = teacher.bodies("/v1/chat/completions")
    assert [(body["seed"], body["top_p"]) for body in bodies] == [(7, 0.95), (8, 0.95), (9, 0.95), (10, 0.95)]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (1, {"disagrees": 1, "duplicate_trace": 2})
    assert [row["id"] for row in jsonl(out / "traces.jsonl")] == ["A#0"]
    assert [(row["id"], row["drop_reason"]) for row in jsonl(out / "dropped.jsonl")] == [
        ("A#1", "duplicate_trace"), ("A#2", "duplicate_trace"), ("A#3", "disagrees")]

    # As a journal written when every sample was asked with seed 7 records its requests: the prompt alone.
    prompt = judge.render_prompt({**RECORDS[0], "reference_answer": ""})
    rows = jsonl(out / "journal.jsonl")
    for row in rows:
        row["request_sha"] = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    (out / "journal.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                       encoding="utf-8")  # fmt: skip
    teacher.left["A"] = [reply("2", "Орфография верна, ошибок нет."), reply("1", "Есть сомнения."),
                         reply("2", "Всё исправлено верно.")]  # fmt: skip
    assert main(argv) == 0
    assert [body["seed"] for body in teacher.bodies("/v1/chat/completions")[4:]] == [8, 9, 10]
    assert [row["id"] for row in jsonl(out / "traces.jsonl")] == ["A#0", "A#1", "A#3"]


def test_a_reasoning_closed_with_no_answer_is_no_cut(tmp_path):
    """A teacher that closed its reasoning and stopped (finish_reason stop) gave no verdict, and a larger max_tokens
    would not give one: verdict_empty, not verdict_unclosed_think (whose advice is to raise max_tokens), whether the
    reasoning came inline or apart, and not counted cut. Cut by the limit, a reasoning apart with no answer is still
    verdict_unclosed_think, and a closed one whose answer the limit cut verdict_cut: both asked again."""
    from train.synthetic.traces import cut_by_max_tokens, trace_outcome

    scale = judge.Scale((0, 1, 2))
    reasoning = "Ошибок нет, всё исправлено."

    def decided(content, apart, finish):
        done = {"ok": True, "content": content, "reasoning": apart, "finish_reason": finish, "error": None}
        outcome, reason, verdict = trace_outcome(done, scale, (2.0,), 0.0)
        return outcome, reason, verdict.feedback, cut_by_max_tokens(done, scale)

    inline = f"<think>\n{reasoning}\n</think>\n\n"
    assert decided(inline, None, "stop") == ("failed", "verdict_empty", reasoning, False)
    assert decided("", reasoning, "stop") == ("failed", "verdict_empty", reasoning, False)
    assert decided("", reasoning, "length") == ("failed", "verdict_unclosed_think", reasoning, True)
    assert decided(inline, None, "length") == ("failed", "verdict_cut", reasoning, True)
    assert decided("", reasoning, None) == ("failed", "verdict_unclosed_think", reasoning, True)  # journalled before


def test_limit_counts_items_and_says_how_many_requests(teacher, tmp_path, capsys):
    """--limit counts items, each asked samples_per_item times, as its help says: --limit 1 with 3 samples is 3
    requests, all for the first item, and the stage's first line says so."""
    with pytest.raises(SystemExit):
        main(["traces", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("--limit INT ask only the first N items (0: all), each samples_per_item times: N x samples_per_item "
            "requests") in help_text
    argv = ["traces", "--config", str(write_config(tmp_path, teacher.base_url)), "--input", str(write_inputs(tmp_path)),
            "--output", str(tmp_path / "traces"), "--limit", "1", "--samples-per-item", "3"]  # fmt: skip
    assert main(argv) == 0
    prompt_a = judge.render_prompt({**RECORDS[0], "reference_answer": ""})
    assert [body["messages"][-1]["content"] for body in teacher.bodies("/v1/chat/completions")] == [prompt_a] * 3
    assert "3 traces (1 items (--limit 1) x 3 samples: 3 requests" in capsys.readouterr().err


def test_a_refused_rerun_names_the_stage_s_own_flag_and_the_documented_runs_do_not_collide(teacher, tmp_path, capsys):
    """Another --input into a folder is refused, and the message names this CLI's flag (--output; judge.plumbing's
    default, --out, is other commands'). The documented traces commands, run one after the other, each write a
    folder of their own."""
    import re
    import shlex

    config = write_config(tmp_path, teacher.base_url)
    out = tmp_path / "traces"
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path)), "--output", str(out),
                 "--limit", "1"]) == 0  # fmt: skip
    capsys.readouterr()
    other = tmp_path / "mine"
    other.mkdir()
    assert main(["traces", "--config", str(config), "--input", str(write_inputs(other)), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Use a fresh --output, or --overwrite to discard it." in err and "--out," not in err

    root = Path(__file__).resolve().parents[2]
    for text in ((root / "docs" / "reasoning-judges.md").read_text(encoding="utf-8"),
                 (root / "train" / "synthetic" / "traces.py").read_text(encoding="utf-8")):
        commands = [shlex.split(command.split("#")[0]) for command in
                    re.findall(r"judge-train data traces (?:[^\n]*\\\n)*[^\n]*", text.replace("\\\\\n", "\\\n"))]
        outputs = {}
        for words in commands:
            given = dict(zip(words, words[1:]))
            outputs.setdefault(given["--output"], set()).add(given["--input"])
        assert len(commands) >= 2 and all(len(inputs) == 1 for inputs in outputs.values()), outputs
