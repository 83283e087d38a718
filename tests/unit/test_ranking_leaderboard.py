"""`judge-eval compare` of three or more rank runs: one leaderboard, paired over instructions.

Each run is a folder as ``judge-eval rank`` leaves it (``bench.json``, ``items.jsonl``, ``predictions.jsonl``,
``run.json``), written from a table of scores small enough to work on paper; each docstring derives its values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.leaderboard import leaderboard, render_leaderboard_markdown, render_leaderboard_page
from tests.support.eval_ranking import write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"  # 0..2: minmax s / 2


def _run(folder: Path, model: str, scores: dict[int, float | None]) -> Path:
    """A ranking folder: per prompt_id, one item of criterion X (meta m) scored ``scores[p]`` (None: no [RESULT])."""
    return write_rank_run(folder, model, [(p, "m", "X", SCALE, score) for p, score in scores.items()])


def _three(tmp_path: Path) -> list[Path]:
    """A: X 2 on P1-P4; B: X 1 on P1-P4; C: X 1 on P1-P3, 0 on P4. P5: A 0, B 2, C's verdict has no score."""
    return [_run(tmp_path / "a", "A", {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0, 5: 0.0}),
            _run(tmp_path / "b", "B", {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 2.0}),
            _run(tmp_path / "c", "C", {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.0, 5: None})]


def test_leaderboard_by_hand(tmp_path: Path) -> None:
    """P5 leaves every run (C has no score there): unpaired, A's mean would be (4 + 0) / 5 = 0.8 and B's 0.6.

    Means over P1-P4 (s / 2): A 1, B 1/2, C (3 * 1/2 + 0) / 4 = 3/8. Win rates (per instruction, the others beaten,
    a tie 1/2, over K - 1 = 2): P1-P3 A 1, B 1/4, C 1/4; P4 A 1, B 1/2, C 0 -> A 1, B 5/16, C 3/16.
    Pairs (m = 3, each at 1 - 0.05/3; 120 resamples to call): A-B: B - A is -1/2 in every resample (each
    instruction differs by 1/2): called. A-C: per instruction 1/2, 1/2, 1/2, 1: always below 0: called. B-C:
    C - B is -(w4 / 2) / 4, 0 whenever P4 is not drawn ((3/4)^4 = 32% of the resamples), so its interval reaches 0:
    not distinguishable, and C beats B on no instruction (3 ties): win rate 3/8. Ranks: A 1, B and C 2 (A above each).
    """
    a, b, c = map(str, _three(tmp_path))
    result = leaderboard([c, a, b], n_boot=200, seed=0)
    models = {m["model"]: m for m in result["models"]}
    assert [m["model"] for m in result["models"]] == ["A", "B", "C"]
    assert (result["n_instructions"], result["n_items"], result["n_pairs"]) == (4, 4, 3)
    assert {k: models[k]["mean"] for k in "ABC"} == pytest.approx({"A": 1.0, "B": 0.5, "C": 3 / 8})
    assert {k: models[k]["win_rate"] for k in "ABC"} == pytest.approx({"A": 1.0, "B": 5 / 16, "C": 3 / 16})
    assert {k: models[k]["rank"] for k in "ABC"} == {"A": 1, "B": 2, "C": 2}
    assert models["A"]["ci"] == [1.0, 1.0] and models["B"]["ci"] == [0.5, 0.5]
    assert models["B"]["indistinguishable_from"] == [c] and models["C"]["indistinguishable_from"] == [b]
    assert models["A"]["indistinguishable_from"] == []
    pairs = {(p["a"], p["b"]): p for p in result["pairs"]}
    assert pairs[(a, b)]["delta"] == pytest.approx(-0.5) and pairs[(a, b)]["verdict"] == "B lower"
    assert pairs[(a, b)]["ci"] == [-0.5, -0.5] and pairs[(a, b)]["win_rate_b"] == 0.0
    assert pairs[(a, c)]["verdict"] == "B lower"
    assert pairs[(b, c)]["delta"] == pytest.approx(-1 / 8) and pairs[(b, c)]["verdict"] == "no difference"
    assert pairs[(b, c)]["ci"][1] == 0.0 and pairs[(b, c)]["win_rate_b"] == pytest.approx(3 / 8)
    assert pairs[(b, c)]["level"] == pytest.approx(1 - 0.05 / 3)
    # P5 is listed per run with why.
    assert models["A"]["excluded"]["not_scored_by_other"] == [5] and models["C"]["excluded"]["no_score"] == [5]
    md = render_leaderboard_markdown(result)
    assert "| 2 | B (" in md and "| 2 | C (" in md and "| 1 | A (" in md
    assert "Bonferroni" in md and "not scored by another run: 1" in md
    assert "<table" in render_leaderboard_page(result)


def test_leaderboard_from_the_command_line(tmp_path: Path, capsys) -> None:
    """judge-eval compare with three rank runs writes compare.json, .md and .html (it refused any number but 2)."""
    runs = [str(p) for p in _three(tmp_path)]
    out = tmp_path / "board"
    assert main(["compare", *runs, "--out", str(out), "--n-boot", "200"]) == 0
    result = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert result["kind"] == "leaderboard" and [m["rank"] for m in result["models"]] == [1, 2, 2]
    assert (out / "compare.md").is_file() and (out / "compare.html").is_file()
    assert f"1. A ({runs[0]}): 1.000 [1.000, 1.000]" in capsys.readouterr().out


def test_leaderboard_refusals_and_one_shared_instruction(tmp_path: Path, capsys) -> None:
    """One run alone, and a run given twice, are refused by name; runs sharing one instruction get no interval
    and say why (one instruction redrawn is always itself), and no pair is called."""
    a, b, c = (_run(tmp_path / n, n.upper(), {1: s}) for n, s in (("a", 2.0), ("b", 1.0), ("c", 0.0)))
    assert main(["compare", str(a)]) == 2
    assert "a leaderboard takes at least 3 rank runs, got 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="the same run given twice"):
        leaderboard([a, b, a])
    result = leaderboard([a, b, c], n_boot=200)
    assert result["n_boot"] == 0 and "share 1 instruction with an item every one scored" in result["why_no_interval"]
    assert {p["verdict"] for p in result["pairs"]} == {"—"}
    assert all("rests on 1 instruction scored by every run" in p["why_no_call"] for p in result["pairs"])
    assert [m["rank"] for m in result["models"]] == [1, 1, 1]


def test_an_instruction_whose_gate_some_runs_failed_leaves_every_run(tmp_path: Path) -> None:
    """P1: X 2 / 1 / 0 for A / B / C, the binary G 1 (A's gate closes: its X 0), 0, and no score (C). P2, P3: the
    same X, G 0 everywhere. P1's gate is known on two sides only, so P1 leaves all three: means over P2, P3 are A 1,
    B 1/2, C 0 (with P1 in, A's would be (0 + 1 + 1) / 3 = 2/3)."""
    binary = "0: нет нарушения\n\n1: есть нарушение"
    runs = []
    for name, x, g1 in (("A", 2.0, 1.0), ("B", 1.0, 0.0), ("C", 0.0, None)):
        rows = [(p, "m", crit, rubric, score) for p in (1, 2, 3)
                for crit, rubric, score in (("X", SCALE, x), ("G", binary, g1 if p == 1 else 0.0))]
        runs.append(write_rank_run(tmp_path / name, name, rows))
    result = leaderboard(runs, n_boot=0)
    assert [(m["model"], m["mean"]) for m in result["models"]] == [("A", 1.0), ("B", 0.5), ("C", 0.0)]
    assert (result["n_instructions"], result["n_items"]) == (2, 4)  # P2, P3 x (X, G)
    assert [m["excluded"]["gate_scored_by_one"] for m in result["models"]] == [[1], [1], [1]]


def test_equal_means_summed_in_another_order_tie(tmp_path: Path) -> None:
    """Three runs deal the same scores {0, 0, 1, 2, 3, 3} on a 0..3 rubric to six criteria in three orders, on three
    instructions: every per-instruction mean is (0 + 0 + 1/3 + 2/3 + 1 + 1) / 6 = 1/2 exactly, but the float totals
    of 1/3 and 2/3 in another order differ in their last bit (B's 0.4999999999999999). By hand: every pair ties on
    every instruction, so each win rate is 1/2, each delta 0, no call, all three ranked 1."""
    scale = "0: плохо\n1: так себе\n2: средне\n3: хорошо"

    def run(name: str, scores: tuple[int, ...]) -> str:
        return str(write_rank_run(tmp_path / name, name, [(p, "m", c, scale, s) for p in (1, 2, 3)
                                                          for c, s in zip("UVWXYZ", scores)]))

    runs = [run("A", (1, 0, 2, 0, 3, 3)), run("B", (2, 3, 1, 0, 3, 0)), run("C", (3, 3, 2, 1, 0, 0))]
    result = leaderboard(runs, n_boot=200)
    assert [(m["rank"], m["mean"], m["win_rate"]) for m in result["models"]] == [(1, 0.5, 0.5)] * 3
    # Every resampled difference is 0, on both sides of the two-sided test: p = 2·min(1, 1) capped at 1, never 0
    # (a strict-sign count would find no resample on either side and call the tie p = 0).
    assert [(p["delta"], p["win_rate_b"], p["verdict"], p["p_value"]) for p in result["pairs"]] == \
        [(0.0, 0.5, "no difference", 1.0)] * 3


def test_leaderboard_checks_the_judge_of_every_pair_not_only_against_the_first(tmp_path: Path) -> None:
    """A's server said nothing of its weights; B's and C's loaded the same folder /ckpt/judge with other
    fingerprints (retrained in place between them). Against A alone neither differs: every pair is checked, so B
    and C are refused, named; --allow-other-judge ranks them and says what differs, and a root only two runs
    recorded as other paths is a note of that pair."""
    a, b, c = _three(tmp_path)
    for folder, fingerprint in ((b, "aa"), (c, "bb")):
        run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        run.update(weights_fingerprint=fingerprint, server_limits={"root": "/ckpt/judge"})
        (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{b} and {c} were judged differently \\(weights_fingerprint 'aa' vs 'bb'\\)"):
        leaderboard([a, b, c], n_boot=0)
    result = leaderboard([a, b, c], n_boot=0, allow_other_judge=True)
    assert result["judge_pairs"] == [{"a": str(b), "b": str(c), "differences": {"weights_fingerprint": ["aa", "bb"]},
                                      "notes": {}}]
    assert all(m["judge_differences"] == {} for m in result["models"])  # from the first run's: none
    assert (f"Judged differently (compared with --allow-other-judge): B ({b}) and C ({c}): weights_fingerprint 'aa' "
            "vs 'bb'.") in render_leaderboard_markdown(result)
    run = json.loads((c / "run.json").read_text(encoding="utf-8"))
    run.update(weights_fingerprint="aa", server_limits={"root": "/other/judge"})
    (c / "run.json").write_text(json.dumps(run), encoding="utf-8")
    result = leaderboard([a, b, c], n_boot=0)
    assert result["judge_pairs"] == [{"a": str(b), "b": str(c), "differences": {},
                                      "notes": {"root": ["/ckpt/judge", "/other/judge"]}}]
    assert f"Note: B ({b}) and C ({c}): root '/ckpt/judge' vs '/other/judge': " in render_leaderboard_markdown(result)
