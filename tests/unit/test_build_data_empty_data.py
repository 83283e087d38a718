"""`judge-train build-data --data ""`: one line naming the flag typed, exit 2, nothing written."""

from __future__ import annotations

import pytest

from train import build_data


@pytest.mark.parametrize("data", ["", "   "])
@pytest.mark.parametrize("with_out", [False, True])
def test_an_empty_data_argument_is_named_as_the_flag_given(tmp_path, capsys, data, with_out):
    """An empty or blank --data said "data: empty" (the `data:` key of a YAML config, which build-data has none of),
    with or without --out; the line names --data, as the command line spells it."""
    out = tmp_path / "rows.jsonl"
    assert build_data.main(["--data", data] + (["--out", str(out)] if with_out else [])) == 2
    assert capsys.readouterr().err == ("judge-train build-data: error: --data: empty; give a file, folder or dataset "
                                       "name (or `sample`)\n")
    assert not out.exists()
