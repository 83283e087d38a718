"""``judge-eval compare --out`` prints each run's name as the terminal should show it: escaped and cut."""

from __future__ import annotations

from eval.cli import main
from tests.unit.test_compare_markdown_names import _named_run

LONG = "y" * 100_000


def test_compare_prints_run_names_escaped_and_cut(tmp_path, capsys):
    """Runs named ``x`` + an ESC sequence + U+202E and 100,000 ``y``: the console's lines hold no ESC and no
    U+202E (written as ``\\x1b``, ``\\u202e``), and the long name is cut to 300 characters on every line that says it
    (the headline, the decision, the runs' notes), never printed whole."""
    experts = [[0, 0, 1], [1, 1, 2]] * 3
    models = ["m1", "m1", "m2", "m2", "m3", "m3"]
    a = _named_run(tmp_path / "A", "x\x1b[31m\u202e", [1.0, 2.0] * 3, experts, models)
    b = _named_run(tmp_path / "B", LONG, [0.0, 1.0] * 3, experts, models)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "c"), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "x\\x1b[31m\\u202e" in out.splitlines()[0]
    assert "y" * 301 not in out and "y" * 200 + "…" in out
    assert all(len(line) < 1_000 for line in out.splitlines())
