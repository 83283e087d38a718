"""build-data names every verdict it drops: ``first_dropped`` per reason, and with ``--out`` a dropped file beside
the rows holding each dropped verdict with its reason; the counts add up, a held-out record whose experts all
abstained included (it counts once, as a Standard one does under ``no_expert_scores``)."""

from __future__ import annotations

import json

import judge
from train.build_data import build_rows, main as build_data_main

RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."


def _record(rid: str, task_type: str = "Editing", scores=(2.0, 1.0), feedback=None) -> judge.JudgeRecord:
    feedback = feedback or ("Ответ верный и полный, ошибок нет.", "This rationale is written in English only.")
    return judge.JudgeRecord(id=rid, instruction=f"Исправь ошибки в тексте {rid}.", answer="Текст.",
                             criteria_name="Грамотность", rubrics=RUBRIC, expert_scores=scores,
                             expert_feedback=feedback, task_type=task_type)  # fmt: skip


def test_a_not_russian_verdict_is_named_in_first_dropped_and_kept_with_its_reason():
    rows, report = build_rows([_record("a")], recipe="seq2seq", zero_shot="drop")
    assert [row["id"] for row in rows] == ["a/0"]
    assert report.first_dropped == {"not_russian": "a/1"}
    assert report.to_dict()["first_dropped"] == {"not_russian": "a/1"}
    assert report.dropped_rows == [{"id": "a/1", "record_id": "a", "score": 1.0,
                                    "feedback": "This rationale is written in English only.",
                                    "drop_reason": "not_russian"}]


def test_a_held_out_record_whose_experts_all_abstained_counts_once():
    abstained = judge.JudgeRecord(id="z", instruction="Перепиши письмо.", answer="Текст.", criteria_name="Грамотность",
                                  rubrics=RUBRIC, expert_scores=(), task_type="Style transfer")
    rows, report = build_rows([_record("a"), abstained], recipe="seq2seq", zero_shot="drop")
    assert report.n_verdicts == len(rows) + sum(report.dropped.values()) == 3
    assert report.dropped["zero_shot"] == 1 and report.first_dropped["zero_shot"] == "z"


def test_out_writes_every_dropped_verdict_beside_the_rows(tmp_path, capsys):
    from train.build_data import dropped_path

    data = tmp_path / "records.jsonl"
    judge.write_jsonl([_record("a"), _record("b", task_type="Style transfer")], data)
    out = tmp_path / "rows.jsonl"
    assert build_data_main(["--data", str(data), "--zero-shot", "drop", "--out", str(out)]) == 0
    assert dropped_path(out) == tmp_path / "rows.dropped.jsonl"
    dropped = [json.loads(line) for line in dropped_path(out).read_text(encoding="utf-8").splitlines()]
    assert [(row["id"], row["drop_reason"]) for row in dropped] == [("b/0", "zero_shot"), ("b/1", "zero_shot"),
                                                                    ("a/1", "not_russian")]
    assert "dropped 3: not_russian=1, zero_shot=2" in capsys.readouterr().out


def test_out_whose_dropped_file_is_the_data_is_refused_and_the_data_kept(tmp_path, capsys):
    data = tmp_path / "rows.dropped.jsonl"
    judge.write_jsonl([_record("a")], data)
    before = data.read_bytes()
    assert build_data_main(["--data", str(data), "--zero-shot", "drop", "--out", str(tmp_path / "rows.jsonl")]) == 2
    assert "--data" in capsys.readouterr().err
    assert data.read_bytes() == before
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_failed_dropped_write_leaves_both_files_as_they_were(tmp_path, capsys, monkeypatch):
    import train.build_data as build_data

    data = tmp_path / "records.jsonl"
    judge.write_jsonl([_record("a")], data)
    out, dropped = tmp_path / "rows.jsonl", tmp_path / "rows.dropped.jsonl"
    out.write_text("old rows\n", encoding="utf-8")
    dropped.write_text("old dropped\n", encoding="utf-8")
    real = build_data._write_lines
    calls = []

    def second_fails(handle, rows):
        calls.append(handle.name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(handle, rows)

    monkeypatch.setattr(build_data, "_write_lines", second_fails)
    assert build_data_main(["--data", str(data), "--zero-shot", "drop", "--out", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "old rows\n"
    assert dropped.read_text(encoding="utf-8") == "old dropped\n"
    assert len(calls) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl", "rows.dropped.jsonl", "rows.jsonl"]
