"""``judge-eval convert``'s --out: a JSONL file of its own, never the source it reads."""

from __future__ import annotations

import shutil

import judge
from eval.cli import main


def test_convert_refuses_to_write_over_its_own_data(tmp_path, capsys):
    """`convert --data ok.jsonl --out ok.jsonl` replaced the source with its conversion (a Parquet source with JSONL
    text under its .parquet name): exit 2, one line, the file untouched; a link to it is the same file."""
    source = tmp_path / "ok.jsonl"
    shutil.copy(judge.sample_data_path(), source)
    before = source.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(source)
    for out in (source, link):
        capsys.readouterr()
        assert main(["convert", "--data", str(source), "--out", str(out)]) == 2
        assert capsys.readouterr().err == (f"judge-eval convert: error: --out {out}: is the --data file itself, "
                                           "which the JSONL would replace; give another --out\n")
    assert source.read_bytes() == before


def test_convert_refuses_an_out_that_is_not_named_jsonl(tmp_path, capsys):
    """convert writes JSONL: `--out records.parquet` held JSONL text under a Parquet name that every reader of it
    misreads. Refused before any record is read; a .JSONL name is one."""
    out = tmp_path / "records.parquet"
    assert main(["convert", "--data", "sample", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (f"judge-eval convert: error: --out {out}: convert writes JSONL; give a file "
                                       "name ending in .jsonl\n")
    assert not out.exists()
    assert main(["convert", "--data", "sample", "--out", str(tmp_path / "records.JSONL")]) == 0


def test_convert_refuses_to_replace_a_file_of_a_run_folder(tmp_path, capsys):
    """`convert --out runs/eval/x/predictions.jsonl` replaced a judge-eval run's verdicts with the records, exit 0.
    A file that exists in a folder holding run.json is refused, exit 2, one line, untouched; a new file there, and a
    plain file written again (a rerun), still convert."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"job": "judge-eval run"}', encoding="utf-8")
    predictions = run / "predictions.jsonl"
    predictions.write_text('{"id": "a"}\n', encoding="utf-8")
    assert main(["convert", "--data", "sample", "--out", str(predictions)]) == 2
    assert capsys.readouterr().err == (f"judge-eval convert: error: --out {predictions}: a file of the run in {run} "
                                       "(it holds run.json), which the records would replace; give a file outside "
                                       "that run folder\n")
    assert predictions.read_text(encoding="utf-8") == '{"id": "a"}\n'
    assert main(["convert", "--data", "sample", "--out", str(run / "records.jsonl")]) == 0
    plain = tmp_path / "records.jsonl"
    for _ in range(2):
        assert main(["convert", "--data", "sample", "--out", str(plain)]) == 0
    assert len(plain.read_text(encoding="utf-8").splitlines()) == 341
