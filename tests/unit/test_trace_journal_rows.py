"""The traces stage resuming a journal: a row without its ``key`` is one line naming file, line and field (exit 2, no
traceback); a row missing other fields is counted as a failure and asked again; ``--seed``, which seeds nothing
here, is refused unless 0, and a folder keyed with it resumes.

Run: .venv/bin/python -m pytest tests/unit/test_trace_journal_rows.py -q
"""

from __future__ import annotations

import json

import pytest

import judge
from tests.unit.test_train_traces import RECORDS, jsonl, reply, write_config, write_inputs
from train.synthetic.cli import main
from train.synthetic.journal import Journal, request_failed
from train.synthetic.traces import trace_outcome


@pytest.fixture
def teacher():
    from tests.unit.test_train_traces import Teacher

    with Teacher() as server:
        yield server


def test_a_journal_row_without_its_key_is_one_line_naming_it(teacher, tmp_path, capsys):
    out = tmp_path / "traces"
    argv = ["traces", "--config", str(write_config(tmp_path, teacher.base_url, samples_per_item=1)),
            "--input", str(write_inputs(tmp_path, RECORDS[:1])), "--output", str(out)]
    assert main(argv) == 0
    assert len(teacher.requests) == 1
    journal = out / "journal.jsonl"
    row = json.loads(journal.read_text())
    journal.write_text(json.dumps({k: v for k, v in row.items() if k != "key"}) + "\n")
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("judge-train data traces: error: ") and f"{journal}:1: field 'key' missing" in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert len(teacher.requests) == 1  # nothing asked


def test_a_key_that_is_not_text_is_named_on_its_line(tmp_path):
    """A blank line before it counts: the line an editor shows."""
    path = tmp_path / "journal.jsonl"
    path.write_text('{"key": "A#0", "ok": true, "content": "2"}\n\n{"key": 7, "ok": true}\n')
    with pytest.raises(ValueError, match=rf"^{path}:3: field 'key' is an integer, not a string"):
        Journal(path)


def test_a_journal_row_missing_its_answer_fields_is_a_counted_failure():
    """{"key", "ok": true} alone was a KeyError on "content"; with no "ok" it was a KeyError on "ok"."""
    scale = judge.Scale((0, 1, 2))
    assert trace_outcome({"key": "A#0", "ok": True}, scale, (2.0,), 0.0)[:2] == ("failed", "verdict_empty")
    no_ok = {"key": "A#0", "content": "2", "reasoning": "Ошибка исправлена, других нет."}
    assert trace_outcome(no_ok, scale, (2.0,), 0.0)[:2] == ("failed", "request_failed")
    assert request_failed(no_ok)  # no answer known: asked again by a rerun


def test_seed_is_not_part_of_the_traces_run_key_and_a_non_zero_one_is_refused(teacher, tmp_path, capsys):
    """Per-sample seeds come from the teacher's extra_body; the stage's own seed seeds nothing. --seed 1 was accepted
    and silently ignored: it is refused now, one line naming what does seed the samples, before anything is asked.
    A folder keyed while the seed was part of the key resumes."""
    out = tmp_path / "traces"
    argv = ["traces", "--config", str(write_config(tmp_path, teacher.base_url, samples_per_item=1)),
            "--input", str(write_inputs(tmp_path, RECORDS[:1])), "--output", str(out)]
    assert main(argv) == 0
    assert len(teacher.requests) == 1
    capsys.readouterr()
    assert main([*argv, "--seed", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "judge-train data traces: error: traces: seed 1 seeds nothing in this stage (no job is assigned or shuffled): "
        "remove `seed` from the config (or set it to 0); a folder run with it resumes as it is. "
        "To seed the teacher's samples set teacher.extra_body.seed."]
    assert len(teacher.requests) == 1
    key_file = out / "run_key.json"
    key = json.loads(key_file.read_text())
    assert "seed" not in key
    key_file.write_text(json.dumps({**key, "seed": 0}))
    assert main(argv) == 0
    assert len(teacher.requests) == 1
    assert [row["id"] for row in jsonl(out / "traces.jsonl")] == ["A#0"]
    assert "seed" not in json.loads(key_file.read_text())


def test_the_teacher_s_seed_still_keys_the_run(teacher, tmp_path):
    """extra_body's seed is what seeds the samples: another one is another run, refused (exit 2)."""
    inputs = write_inputs(tmp_path, RECORDS[:1])
    out = tmp_path / "traces"
    teacher.left["A"] = [reply("2", "Ошибка исправлена, других нет.")] * 2
    first = write_config(tmp_path, teacher.base_url, samples_per_item=1)
    config = json.loads(first.read_text())
    config["teacher"]["extra_body"]["seed"] = 5
    seeded = tmp_path / "seeded.yaml"
    seeded.write_text(json.dumps(config))
    assert main(["traces", "--config", str(first), "--input", str(inputs), "--output", str(out)]) == 0
    assert main(["traces", "--config", str(seeded), "--input", str(inputs), "--output", str(out)]) == 2
    assert len(teacher.requests) == 1
