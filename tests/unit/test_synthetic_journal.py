"""The synthetic stages' input reader (train/synthetic/journal.py ``read_input``): a JSONL input read as strictly as
``judge.load_records`` reads the same file.

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_journal.py -q -n 0
"""

from __future__ import annotations

import pytest

from train.synthetic.cli import main
from train.synthetic.journal import read_input

#: Line 2 gives "instruction" twice: json.loads keeps "б" without a word.
REPEATED = '{"id": "ins-1", "instruction": "а"}\n{"id": "ins-2", "instruction": "в", "instruction": "б"}\n'


def test_a_key_given_twice_in_an_input_row_is_refused_naming_file_line_and_field(tmp_path):
    """The record loader refuses such a row ("field 'instruction': is given twice in the row"); a stage reading the
    same file kept the last value, so one file meant two things."""
    path = tmp_path / "instructions.jsonl"
    path.write_text(REPEATED, encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_input(path)
    assert str(error.value) == (f"{path}:2: field 'instruction' is given twice in the row (JSON would keep the last "
                                "value without a word): give it once")


def test_a_key_given_twice_in_an_object_inside_a_row_is_refused_too(tmp_path):
    """Any object of the line: a repeated key inside a nested value hides a value just as well."""
    path = tmp_path / "answers.jsonl"
    path.write_text('{"id": "a1", "meta": {"model": "x", "model": "y"}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}:1: field 'model' is given twice in the row"):
        read_input(path)


def test_a_stage_given_such_an_input_exits_2_naming_it(tmp_path, capsys):
    """Found when the stage reads its input: the stage's one-line error and its help's exit 2, no traceback."""
    source = tmp_path / "annotate.jsonl"
    source.write_text(REPEATED, encoding="utf-8")
    assert main(["split", "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (f"judge-train data split: error: {source}:2: field 'instruction' is given "
                                            "twice in the row (JSON would keep the last value without a word): give "
                                            "it once")


def test_ctrl_c_ends_a_stage_with_one_line_naming_what_its_journal_keeps(tmp_path, monkeypatch, capsys):
    """Ctrl-C ended every stage with a KeyboardInterrupt traceback (run_jobs re-raises it once the jobs in flight are
    journalled). The stage's last line now says it was interrupted, how many rows its journal keeps (counted in
    the file, so a second Ctrl-C that cut the wait for the jobs in flight is not claimed journalled) and that a rerun
    resumes; exit 130. Ctrl-C is raised here after two of three jobs are journalled; the rerun asks the third only."""
    import json

    import train.synthetic.answers as answers
    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

    real_run_jobs = answers.run_jobs

    def interrupted(jobs, *args, **kwargs):
        real_run_jobs(list(jobs)[:2], *args, **kwargs)
        raise KeyboardInterrupt

    rows = [{"id": f"ins-{k}", "instruction": f"Задание {k}", "task_type": "Editing"} for k in range(3)]
    (tmp_path / "instructions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "answers"
    with ScriptedEndpoint(lambda path, body: (200, chat_completion("Ответ.", body["model"]))) as server:
        config = tmp_path / "answers.yaml"
        config.write_text(json.dumps({"answer_models": [{"model": "m", "base_url": server.base_url}]}))
        argv = ["answers", "--config", str(config), "--input", str(tmp_path / "instructions.jsonl"), "--output", str(out)]
        monkeypatch.setattr(answers, "run_jobs", interrupted)
        assert main(argv) == 130
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"judge-train data answers: interrupted; its journal ({out / 'journal.jsonl'}) keeps 2 rows: rerun "
            "with the same --output to ask only for what they do not answer")
        assert len(server.requests) == 2
        monkeypatch.setattr(answers, "run_jobs", real_run_jobs)
        assert main(argv) == 0
        assert len(server.requests) == 3


def test_ctrl_c_before_any_request_is_journalled_says_so(tmp_path, monkeypatch, capsys):
    """Interrupted before its first request was journalled (dedup embedding, say): nothing to resume is claimed."""
    import train.synthetic.splitting as splitting

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(splitting, "split_records", interrupted)
    source = tmp_path / "annotate.jsonl"
    source.write_text('{"id": "a", "instruction": "а"}\n', encoding="utf-8")
    assert main(["split", "--input", str(source), "--output", str(tmp_path / "out")]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "judge-train data split: interrupted; no request was journalled")


def test_ctrl_c_with_one_row_journalled_says_it_in_the_singular(tmp_path):
    """One journalled row is "1 row", and the rerun asks for what *it* does not answer (not "they")."""
    from train.synthetic.cli import _journal_kept

    (tmp_path / "journal.jsonl").write_text('{"key": "a"}\n', encoding="utf-8")
    assert _journal_kept(tmp_path) == (f"its journal ({tmp_path / 'journal.jsonl'}) keeps 1 row: rerun with the same "
                                       "--output to ask only for what it does not answer")


def test_a_stage_whose_dropped_file_fails_leaves_no_summary(tmp_path, monkeypatch):
    """summary.json marks a finished set: a rerun of the answers stage failing at dropped.jsonl leaves the new
    answers.jsonl and no summary, never the earlier run's summary beside this run's rows."""
    import json

    import train.synthetic.journal as journal
    from train.synthetic.config import AnswersConfig

    config = AnswersConfig()
    first = [{"id": "a", "answer": "x"}]
    journal.write_stage_outputs(tmp_path, "answers", first, [], config)
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))["kept"] == 1
    written = journal.rewrite_journal

    def failing(path, rows):
        if path.name == "dropped.jsonl":
            raise OSError("disk full")
        written(path, rows)

    monkeypatch.setattr(journal, "rewrite_journal", failing)
    second = [{"id": "a", "answer": "x"}, {"id": "b", "answer": "y"}]
    with pytest.raises(OSError, match="disk full"):
        journal.write_stage_outputs(tmp_path, "answers", second, [{"id": "c", "drop_reason": "empty_answer"}], config)
    assert [json.loads(line)["id"] for line in (tmp_path / "answers.jsonl").read_text().splitlines()] == ["a", "b"]
    assert not (tmp_path / "summary.json").exists()


def test_a_refused_request_is_told_by_one_rule_and_is_not_a_failed_one():
    """The traces stage journals a refused request as ``refused_<status>``; the journal tells it by the same rule, so
    the request is counted refused and asked again by the traces stage, not by the failed-request rerun."""
    from train.synthetic.journal import REFUSED_PREFIX, refused_request, request_failed

    refused = {"ok": False, "error": f"{REFUSED_PREFIX}413: too long"}
    assert refused_request(refused) and not request_failed(refused)
    assert not refused_request({"ok": False, "error": "timeout"}) and request_failed({"ok": False, "error": "timeout"})
    assert not refused_request({"ok": True, "reasoning": "x"}) and not refused_request({"error": None})


def test_a_stage_input_whose_byte_order_mark_stands_on_a_line_of_its_own_reads_its_rows(tmp_path):
    """A file saved with a byte order mark and a blank first line: json.loads takes a mark before a row, but the
    mark alone was "line 1: not a JSON line (Expecting value)"; it is no part of any row, and the row keeps its line."""
    path = tmp_path / "instructions.jsonl"
    path.write_bytes(b'\xef\xbb\xbf\n{"id": "i1", "instruction": "x"}\n')
    inputs = read_input(path)
    assert inputs.rows == [{"id": "i1", "instruction": "x"}] and list(inputs.row_index) == [1]
