"""`judge-eval rank --data sampel`: the hint the commands reading judged records give (did you mean `sample`?) sent a
ranking's user to a name the ranking does not read (`--data sample` then said only "no such file or folder"). Rank
says instead what it reads; a path that is there is read as that path, whatever its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.rank import load_instructions
from tests.support.eval_ranking import instruction_rows
from tests.support.release_instructions import write_instructions_dataset

RANK_READS = ("the bundled `sample` holds judged records, which judge-eval rank does not read: it ranks on "
              "POLLUX-instructions rows (prompt_id, instruction, criteria), such as ai-forever/POLLUX-instructions")


@pytest.mark.parametrize("name", ["sampel", "Samples", "sample"])
def test_the_sample_or_a_near_miss_is_told_what_rank_reads(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as raised:
        load_instructions(name)
    assert str(raised.value) == f"{name}: no such file or folder; {RANK_READS}"
    argv = ["rank", "--model", "http://127.0.0.1:9/v1", "--judge", "http://127.0.0.1:9/v1", "--data", name,
            "--out", str(tmp_path / "out"), "--no-progress"]
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err == f"judge-eval rank: error: {name}: no such file or folder; {RANK_READS}\n"
    assert not (tmp_path / "out").exists()


def test_a_name_far_from_the_sample_is_not_told_of_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as raised:
        load_instructions("simple.jsonl")
    assert str(raised.value) == "simple.jsonl: no such file or folder"


@pytest.mark.parametrize("name", ["sample", "sampel"])
def test_a_bare_path_that_is_there_is_read_as_that_path(tmp_path, monkeypatch, name):
    """A folder named like the sample is the user's data: read, never hinted at."""
    monkeypatch.chdir(tmp_path)
    write_instructions_dataset(Path(name), instruction_rows())
    assert [row.prompt_id for row in load_instructions(name)] == [row["prompt_id"] for row in instruction_rows()]
    (Path(name) / "data").rename(Path(name) / "elsewhere")  # there, but no table in it: its own words, no hint
    with pytest.raises(FileNotFoundError) as raised:
        load_instructions(name)
    assert str(raised.value).startswith(f"{name}: a folder with neither Parquet shards") and "sample`" not in str(
        raised.value)
