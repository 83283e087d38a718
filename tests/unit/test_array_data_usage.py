"""``python -m eval.judging.array_data`` (slurm/eval.sbatch's helper) asked wrongly: a usage line and exit 2, never an
IndexError or ValueError traceback; ``--help`` prints the usage and exits 0."""

from __future__ import annotations

import pytest

from eval.judging.array_data import main


@pytest.mark.parametrize("argv, said", [
    ([], "no command"),
    (["count"], "count takes DATA"),
    (["repeats"], "repeats takes DATA"),
    (["overwrite"], "overwrite takes CONFIG"),
    (["cut", "data.jsonl"], "cut takes DATA FIRST LAST"),
    (["cut", "data.jsonl", "1", "two"], "cut: FIRST and LAST are whole numbers, not '1' and 'two'"),
    (["count", "a.jsonl", "b.jsonl"], "count takes DATA"),
    (["counts"], "unknown command 'counts'"),
])
def test_a_wrong_call_is_a_usage_line_and_exit_2(argv, said, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"eval.judging.array_data: {said}") and "usage: python -m eval.judging.array_data" in err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_prints_the_usage(flag, capsys):
    assert main([flag]) == 0
    assert capsys.readouterr().out.startswith("usage: python -m eval.judging.array_data {repeats DATA | count DATA |")


def test_a_right_call_still_runs(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": 1}\n\n{"id": 2}\n', encoding="utf-8")
    assert main(["count", str(data)]) == 0
    assert capsys.readouterr().out == "2\n"
    assert main(["cut", str(data), "2", "2"]) == 0
    assert capsys.readouterr().out == '{"id": 2}\n'
