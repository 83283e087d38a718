"""Training rows: which verdicts become rows, which are dropped and why, and the Zero-Shot guard."""

from __future__ import annotations

import dataclasses
import hashlib

import json

import pytest

import judge
from train.build_data import build_rows, main as build_data_main, russian_share, split_rows

RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."


def record(rid: str, scores, feedback, *, criterion="Грамотность", task_type="Editing", criteria_score=None):
    return judge.JudgeRecord(
        id=rid,
        instruction="Сколько будет два плюс два?",
        answer="Четыре.",
        criteria_name=criterion,
        rubrics=RUBRIC,
        expert_scores=tuple(scores),
        expert_feedback=None if feedback is None else tuple(feedback),
        criteria_score=criteria_score if criteria_score is not None else sum(scores) / len(scores),
        task_type=task_type,
    )


# (scores, feedback, kept feedback, dropped reasons) — one record each, seq2seq rows
CASES = [
    ([2], ["Ответ верный и полный."], ["Ответ верный и полный."], {}),
    ([2], ["Отлично."], ["Отлично."], {}),  # one word is enough for a perfect score
    ([2], ["Безупречно-точно."], ["Безупречно-точно."], {}),  # a hyphenated word is one word (judge.verdicts)
    ([1], ["Безупречно-точно."], [], {"too_few_words": 1}),
    ([1], ["Неполно."], [], {"too_few_words": 1}),  # ... and only for a perfect score
    ([2], ["  "], [], {"too_few_words": 1}),  # one word, not none: a blank one trained "[FEEDBACK]  [RESULT] 2 [END]"
    ([2], [". —"], [], {"too_few_words": 1}),  # no word at all, only punctuation (was not_russian, by its letters)
    ([1], ["The answer is only partly correct."], [], {"not_russian": 1}),
    ([3], ["Ответ верный и полный."], [], {"score_out_of_scale": 1}),
    ([1.5], ["Ответ верный, но неполный."], [], {"score_not_a_level": 1}),  # a target between two rubric points
    ([2], ["Верно. [RESULT] 2 [END]"], [], {"tags_in_feedback": 1}),
    # a second block's tag, in any spelling: a target GRPO's tagged format reward would refuse
    ([2], ["Пометка [ feedback ] рецензента не нужна."], [], {"tags_in_feedback": 1}),
    ([2, 0], None, [], {"no_feedback": 2}),
    ([2, 1], ["Всё верно, ошибок нет.", "Есть неточность в ответе."], ["Всё верно, ошибок нет.", "Есть неточность в ответе."], {}),
    ([0], ["  Ответ неверный: два плюс два — четыре, а не пять.  "], ["Ответ неверный: два плюс два — четыре, а не пять."], {}),
]


@pytest.mark.parametrize("scores, feedback, kept, dropped", CASES)
def test_verdicts_become_rows_or_are_dropped_with_a_reason(scores, feedback, kept, dropped):
    """Paper App. B rules: Russian rationale, >= 2 words unless perfect, score one of the scale's levels; tags never
    leak."""
    rows, report = build_rows([record("r1", scores, feedback)], recipe="seq2seq")
    assert [row["feedback"] for row in rows] == kept
    assert dict(report.dropped) == dropped
    assert report.n_rows == len(kept) and report.n_verdicts == len(scores)


def test_a_blank_rationale_is_no_row_at_a_perfect_score_whatever_the_russian_share():
    """A blank rationale at the best level, beside a one-word one at an imperfect score. With
    min_russian_share 0 (no language check) the blank one is still dropped: its rule is the word count's."""
    rows, report = build_rows([record("r1", [2, 1], ["   ", "Да."])], recipe="seq2seq", min_russian_share=0.0)
    assert rows == [] and dict(report.dropped) == {"too_few_words": 2}
    rows, report = build_rows([record("r1", [2], ["   "])], recipe="regression", min_russian_share=0.0)
    assert rows == [] and dict(report.dropped) == {"too_few_words": 1}


def _critical_record(rid, criterion_id, score, feedback):
    crit = judge.load_taxonomy().criteria[criterion_id]
    return judge.JudgeRecord(id=rid, instruction="Сколько будет два плюс два?", answer="Четыре.",
                             criteria_name=crit.name["ru"], rubrics=crit.rubric("ru"), expert_scores=(score,),
                             expert_feedback=(feedback,), criteria_score=float(score), task_type="Editing")


@pytest.mark.parametrize("criterion_id", ["narushenie_formata", "censor"])
def test_one_word_rationales_are_kept_at_the_critical_criteria_best_level_0(criterion_id):
    """Paper, Appendix B, on both Critical criteria (App. P.1: 0 = nothing wrong): 'Нормально.' at 0 is a
    perfect verdict and kept; 'Зацикливание.' at 1 (the violation) is one word for an imperfect score, dropped."""
    records = [_critical_record("ok", criterion_id, 0, "Нормально."),
               _critical_record("bad", criterion_id, 1, "Зацикливание.")]
    rows, report = build_rows(records, recipe="seq2seq")
    assert [(row["record_id"], row["feedback"]) for row in rows] == [("ok", "Нормально.")]
    assert dict(report.dropped) == {"too_few_words": 1}


def test_one_word_rationales_on_a_two_level_criterion_best_at_the_top():
    """Operability ('1: The code runs', criteria.json) is two-level but best at 1: one word is kept at 1 only."""
    records = [_critical_record("ok", "operability", 1, "Работает."),
               _critical_record("bad", "operability", 0, "Падает.")]
    rows, report = build_rows(records, recipe="seq2seq")
    assert [row["record_id"] for row in rows] == ["ok"] and dict(report.dropped) == {"too_few_words": 1}


def test_seq2seq_rows_carry_the_rendered_prompt_and_target():
    """The prompt is judge.render_prompt; the target judge.render_target with the verdict's own score. A record alone
    in its instruction group, without an instruction_id column, names the group by its raw text."""
    rec = record("r1", [2, 1], ["Всё верно, ошибок нет.", "Есть неточность в ответе."])
    rows, _ = build_rows([rec], recipe="seq2seq")
    assert rows[1] == {
        "id": "r1/1",
        "record_id": "r1",
        "instruction_id": hashlib.sha256(rec.instruction.encode("utf-8")).hexdigest()[:16],
        "instruction_group": hashlib.sha256(rec.instruction.encode("utf-8")).hexdigest()[:16],
        "prompt": judge.render_prompt(rec),
        "feedback": "Есть неточность в ответе.",
        "score": 1.0,
        "completion": "[FEEDBACK] Есть неточность в ответе. [RESULT] 1 [END]",
    }


@pytest.mark.parametrize("score_target, labels", [("mean", [1.5, 1.5]), ("expert", [2.0, 1.0])])
def test_regression_rows_carry_the_rationale_target_and_the_label(score_target, labels):
    """Regression: target [FEEDBACK] ... [END] (no score), label = mean over experts or the verdict's own score."""
    rec = record("r1", [2, 1], ["Всё верно, ошибок нет.", "Есть неточность в ответе."])
    rows, _ = build_rows([rec], recipe="regression", score_target=score_target)
    assert [row["label"] for row in rows] == labels
    assert rows[0]["completion"] == "[FEEDBACK] Всё верно, ошибок нет. [END]"


def test_a_regression_label_is_not_a_mean_over_an_off_scale_score():
    """Experts 2 and 5 on a 0..2 rubric: the 5 row is dropped (off the scale), and the mean label 3.5 it pulled
    up would have been the other row's label; the item trains no regression row, counted. Each expert's own score
    as the label (score_target expert) keeps the in-scale row. (A -1 there is refused when the record is built:
    the release's abstention code, ``test_record_error_places``.)"""
    rec = record("r1", [2, 5], ["Всё верно, ошибок нет.", "Ответ лучше всяких похвал."])
    rows, report = build_rows([rec], recipe="regression")
    assert rows == [] and dict(report.dropped) == {"label_from_off_scale_scores": 2}
    rows, report = build_rows([rec], recipe="regression", score_target="expert")
    assert [row["label"] for row in rows] == [2.0] and dict(report.dropped) == {"score_out_of_scale": 1}
    rows, report = build_rows([rec], recipe="seq2seq")  # each verdict is its own target: the in-scale one trains
    assert [row["score"] for row in rows] == [2.0] and dict(report.dropped) == {"score_out_of_scale": 1}


def zero_shot_record(rid="z1"):
    # An instruction of its own: rows of one instruction share a split (judge.splits.splits_of), so one sharing
    # record()'s instruction would take those rows into the Zero-Shot test with it.
    return dataclasses.replace(record(rid, [2], ["Ответ верный и полный."], task_type="Style transfer"),
                               instruction="Перепиши это письмо в стиле делового отчёта.")


def test_zero_shot_records_are_refused_by_default():
    """A Zero-Shot task type in training data stops the build with LeakageError naming the record."""
    with pytest.raises(judge.LeakageError, match="z1"):
        build_rows([record("r1", [2], ["Ответ верный и полный."]), zero_shot_record()], recipe="seq2seq")


def test_zero_shot_records_can_be_dropped_or_allowed_explicitly():
    """zero_shot='drop' leaves them out and counts them; 'allow' keeps them."""
    records = [record("r1", [2], ["Ответ верный и полный."]), zero_shot_record()]
    rows, report = build_rows(records, recipe="seq2seq", zero_shot="drop")
    assert [row["record_id"] for row in rows] == ["r1"]
    assert report.dropped == {"zero_shot": 1} and report.zero_shot_ids == ["z1"]
    rows, report = build_rows(records, recipe="seq2seq", zero_shot="allow")
    assert [row["record_id"] for row in rows] == ["r1", "z1"] and not report.dropped


def test_zero_shot_criteria_are_refused_too():
    """A held-out criterion (Rhyme quality) is Zero-Shot whatever the task type."""
    with pytest.raises(judge.LeakageError):
        build_rows([record("r1", [2], ["Рифма точная везде."], criterion="Качество рифмы")], recipe="seq2seq")


def test_the_sample_data_report_counts_every_verdict():
    """On the bundled sample data every verdict is either a row or counted under a reason: its 1,183 expert verdicts
    are 648 Standard rows and 535 Zero-Shot drops, nothing else dropped."""
    rows, report = build_rows(judge.load_records(judge.sample_data_path()), recipe="seq2seq", zero_shot="drop")
    assert report.n_rows == len(rows) == 648
    assert report.n_verdicts == len(rows) + sum(report.dropped.values()) == 1183
    assert dict(report.dropped) == {"zero_shot": 535}


def test_split_keeps_an_instructions_records_together_and_is_stable():
    """The validation split hashes the instruction: every verdict of every record (answer x criterion) of one
    instruction falls on one side, run after run; a validation row whose instruction was trained on would measure
    memory. 200 records over 50 instructions, four criteria each."""
    import dataclasses

    base = [record(f"r{i}", [2, 1], ["Всё верно, ошибок нет.", "Есть неточность в ответе."]) for i in range(200)]
    records = [dataclasses.replace(r, instruction=f"Задание номер {i // 4}.") for i, r in enumerate(base)]
    rows, _ = build_rows(records, recipe="seq2seq")
    train, held_out = split_rows(rows, 0.1)
    assert {r["record_id"] for r in train}.isdisjoint({r["record_id"] for r in held_out})
    by_instruction = {r["record_id"]: r["instruction_id"] for r in rows}
    assert {by_instruction[r["record_id"]] for r in train}.isdisjoint({by_instruction[r["record_id"]] for r in held_out})
    assert 1 <= len({r["instruction_id"] for r in held_out}) <= 15
    assert split_rows(rows, 0.1) == (train, held_out)
    assert split_rows(rows, 0.0) == (rows, [])


def test_a_rationale_half_in_cyrillic_letters_is_russian_enough_by_default():
    """Paper, Appendix B: "The rationale must be written in the Russian language"; the bound is this toolkit's
    (``min_russian_share``, 0.5 of the letters, the default of the config and of build_rows alike): "Ответ good" is
    5 Cyrillic letters of 9 (kept), "Да, all good" 2 of 9 (dropped as not_russian), "Ответ верный OK okay" 11 of 17
    (kept), "Код ok: print works" 3 of 15 (dropped)."""
    from train.config import Seq2SeqConfig

    assert Seq2SeqConfig().min_russian_share == 0.5
    texts = ["Ответ good", "Да, all good", "Ответ верный OK okay", "Код ok: print works"]
    assert [russian_share(t) for t in texts] == [5 / 9, 2 / 9, 11 / 17, 3 / 15]
    rows, report = build_rows([record("r1", [1, 1, 1, 1], texts)], recipe="seq2seq")
    assert [row["feedback"] for row in rows] == ["Ответ good", "Ответ верный OK okay"]
    assert dict(report.dropped) == {"not_russian": 2}
    exact = "Ответ abcde"  # 5 of 10: exactly the bound, kept (only a share below it drops)
    assert russian_share(exact) == 0.5
    assert [row["feedback"] for row in build_rows([record("r2", [1], [exact])], recipe="seq2seq")[0]] == [exact]


@pytest.mark.parametrize("text, share", [("Ответ верный", 1.0), ("Ответ OK", 5 / 7), ("All good", 0.0), ("123 !", 0.0)])
def test_russian_share_counts_letters_only(text, share):
    """Digits and punctuation do not count; the share is over letters."""
    assert russian_share(text) == pytest.approx(share)


def test_build_data_command_writes_rows_and_refuses_leakage(tmp_path, capsys):
    """`judge-train build-data` prints the report, writes JSONL, and exits 2 on Zero-Shot rows unless told."""
    out = tmp_path / "rows.jsonl"
    assert build_data_main(["--data", "sample", "--zero-shot", "drop", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rows kept" in printed and "zero_shot=" in printed
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["completion"].startswith("[FEEDBACK] ") and first["completion"].endswith(" [END]")
    assert build_data_main(["--data", "sample"]) == 2
    assert "Zero-Shot" in capsys.readouterr().err


def test_build_data_refuses_the_released_benchmark_unless_told(tmp_path, capsys):
    """POLLUX is a test set (its dataset card asks that the benchmark not be used for training):
    build-data refuses its rows, as released or converted to JSONL, unless --allow-benchmark-rows."""
    from tests.support.release_artifacts import write_released_dataset

    released = write_released_dataset(tmp_path / "POLLUX")
    converted = judge.write_jsonl(judge.load_records(released), tmp_path / "converted.jsonl")
    for source in (released, converted):
        assert build_data_main(["--data", str(source), "--zero-shot", "drop"]) == 2
        printed = capsys.readouterr().err
        assert "8 of " in printed and "released POLLUX benchmark" in printed and "asks that it not be used for training" in printed
        assert "--allow-benchmark-rows" in printed
    out = tmp_path / "rows.jsonl"
    assert build_data_main(["--data", str(released), "--zero-shot", "drop", "--allow-benchmark-rows", "--out", str(out)]) == 0
    assert "rows kept" in capsys.readouterr().out and out.is_file()


def test_training_records_of_the_project_schema_are_not_benchmark_rows():
    """The bundled sample data (project schema) is not mistaken for the benchmark."""
    from train.build_data import load_training_records

    assert len(load_training_records("sample")) == 341


def test_unknown_task_type_stops_the_build_naming_the_row(tmp_path, capsys):
    """A task type the taxonomy cannot resolve might be a held-out one: refused and dropped modes both stop,
    naming source, row and field; --zero-shot allow skips the check."""
    rows = [record("r1", [2], ["Ответ верный и полный."]).to_dict() | {"task_type": "Неизвестная задача"}]
    path = tmp_path / "custom.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    for mode in ("refuse", "drop"):
        assert build_data_main(["--data", str(path), "--zero-shot", mode]) == 2
        printed = capsys.readouterr().err
        assert f"{path}: line 1: field 'task_type'" in printed and "'Неизвестная задача'" in printed
        assert "zero_shot: allow" in printed
    assert build_data_main(["--data", str(path), "--zero-shot", "allow"]) == 0


def test_a_resumed_run_keeps_the_validation_rule_it_started_with(tmp_path):
    """A --resume of a run whose run.json records no validation_split (started when the split was by record) keeps
    drawing its validation rows by record, else its validation loss would include rows it trained on; one that
    records the rule keeps it; a fresh run splits by instruction group. The rule is written into run.json's data
    report."""
    import dataclasses
    import json

    from train.build_data import BuildReport, validation_unit
    from train.config import load_config

    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), output_dir=str(tmp_path))
    assert validation_unit(config) == "instruction_group"
    resumed = dataclasses.replace(config, resume=True)
    (tmp_path / "run.json").write_text(json.dumps({"data": {"n_rows": 3}}), encoding="utf-8")
    assert validation_unit(resumed) == "record"
    (tmp_path / "run.json").write_text(json.dumps({"data": {"validation_split": "instruction"}}), encoding="utf-8")
    assert validation_unit(resumed) == "instruction"
    assert BuildReport(validation_split="record").to_dict()["validation_split"] == "record"
    # 200 records of one instruction: by instruction they fall on one side; by record, on both, as before.
    records = [record(f"r{i}", [2, 1], ["Всё верно, ошибок нет.", "Есть неточность в ответе."]) for i in range(200)]
    rows, _ = build_rows(records, recipe="seq2seq")
    assert [] in split_rows(rows, 0.5)
    by_record = split_rows(rows, 0.5, "record")
    assert by_record[0] and by_record[1]


@pytest.mark.parametrize("recipe", ["seq2seq", "regression"])
def test_a_record_without_any_verdict_is_counted_not_lost(tmp_path, recipe):
    """A record whose experts all abstained (``null`` or ``-1`` scores: the loader keeps it without a score) or that
    has no scores at all yields no row: it is counted under ``no_expert_scores``, once per record, so the report
    that run.json and the model card carry accounts for every record read."""
    from train.build_data import load_training_records

    base = {"instruction": "Сколько будет два плюс два?", "criteria_name": "Грамотность", "rubrics": RUBRIC,
            "task_type": "Editing"}
    lines = [
        {**base, "id": "a", "answer": "Четыре.", "expert_scores": [2], "expert_feedback": ["Ответ верный и полный."]},
        {**base, "id": "b", "answer": "Пять.", "expert_scores": [None, None],
         "expert_feedback": ["Критерий неприменим к ответу.", "Не применимо здесь совсем."]},
    ]
    path = tmp_path / "abstained.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    records = load_training_records(str(path))
    assert [r.expert_scores for r in records] == [(2.0,), ()]
    empty = record("c", [], None, criteria_score=1.0)
    rows, report = build_rows([*records, empty], recipe=recipe)
    assert [row["record_id"] for row in rows] == ["a"]
    assert dict(report.dropped) == {"no_expert_scores": 2}
    assert report.n_verdicts == len(rows) + sum(report.dropped.values()) == 3
    assert "dropped 2: no_expert_scores=2" in report.summary()
    assert report.to_dict()["dropped"] == {"no_expert_scores": 2}
