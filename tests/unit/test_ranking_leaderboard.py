"""`judge-eval compare` of three or more rank runs: one leaderboard, paired over instructions.

Each run is a folder as ``judge-eval rank`` leaves it (``rank.json``, ``items.jsonl``, ``predictions.jsonl``,
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
    Pairs (m = 3, each at 1 - 0.05/3): A-B: B - A is -1/2 in every resample (each instruction differs by 1/2), and
    was called "B lower" at the bootstrap's p 0; but under the null each instruction's sign is a coin toss, and all
    four falling one way has chance 2/2^4 = 1/8, the sign-flip test's p: no test on 4 instructions gets below
    1/60 (the least n with 2/2^n < 1/60 is 7). A-C: C - A per instruction -1/2, -1/2, -1/2, -1: p 1/8 too. B-C:
    C - B is -1/2 on P4 alone, every flip as far from 0: p 1; C beats B on no instruction (3 ties): win rate 3/8.
    No pair can be called, so none is tested: every candidate rank 1, not "not distinguishable" but not tested.
    """
    a, b, c = map(str, _three(tmp_path))
    result = leaderboard([c, a, b], n_boot=200, seed=0)
    models = {m["model"]: m for m in result["models"]}
    assert [m["model"] for m in result["models"]] == ["A", "B", "C"]
    assert (result["n_instructions"], result["n_items"], result["n_pairs"]) == (4, 4, 3)
    assert {k: models[k]["mean"] for k in "ABC"} == pytest.approx({"A": 1.0, "B": 0.5, "C": 3 / 8})
    assert {k: models[k]["win_rate"] for k in "ABC"} == pytest.approx({"A": 1.0, "B": 5 / 16, "C": 3 / 16})
    assert {k: models[k]["rank"] for k in "ABC"} == {"A": 1, "B": 1, "C": 1}
    assert models["A"]["ci"] == [1.0, 1.0] and models["B"]["ci"] == [0.5, 0.5]
    assert all(models[k]["indistinguishable_from"] == [] for k in "ABC")
    assert models["A"]["untested_with"] == [b, c] and models["C"]["untested_with"] == [a, b]
    pairs = {(p["a"], p["b"]): p for p in result["pairs"]}
    assert pairs[(a, b)]["delta"] == pytest.approx(-0.5) and pairs[(a, b)]["p_value"] == 1 / 8
    assert pairs[(a, b)]["ci"] == [-0.5, -0.5] and pairs[(a, b)]["win_rate_b"] == 0.0
    assert (pairs[(a, c)]["p_value"], pairs[(b, c)]["p_value"]) == (1 / 8, 1.0)
    assert {p["verdict"] for p in result["pairs"]} == {"—"}
    assert pairs[(a, b)]["why_no_call"] == (
        "rests on 4 instructions with a non-binary score scored by every run: the sign-flip test's smallest p there, "
        "2/2^4 = 0.125, is not below alpha 0.01667; a call needs at least 7")
    assert pairs[(b, c)]["delta"] == pytest.approx(-1 / 8) and pairs[(b, c)]["ci"][1] == 0.0
    assert pairs[(b, c)]["win_rate_b"] == pytest.approx(3 / 8) and pairs[(b, c)]["level"] == pytest.approx(1 - 0.05 / 3)
    # P5 is listed per run with why.
    assert models["A"]["excluded"]["not_scored_by_other"] == [5] and models["C"]["excluded"]["no_score"] == [5]
    md = render_leaderboard_markdown(result)
    assert "| 1 | B (" in md and "| 1 | C (" in md and "| 1 | A (" in md and "not tested against" in md
    assert "Bonferroni" in md and "not scored by another run: 1" in md
    assert "<table" in render_leaderboard_page(result)


def test_leaderboard_from_the_command_line(tmp_path: Path, capsys) -> None:
    """judge-eval compare with three rank runs writes compare.json, .md and .html (it refused any number but 2)."""
    runs = [str(p) for p in _three(tmp_path)]
    out = tmp_path / "board"
    assert main(["compare", *runs, "--out", str(out), "--n-boot", "200"]) == 0
    result = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert result["kind"] == "leaderboard" and [m["rank"] for m in result["models"]] == [1, 1, 1]
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
    assert result["n_boot"] == 0
    assert "share 1 instruction with a non-binary score every one scored" in result["why_no_interval"]
    assert {p["verdict"] for p in result["pairs"]} == {"—"}
    assert all("rests on 1 instruction with a non-binary score scored by every run" in p["why_no_call"]
               for p in result["pairs"])
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
    # Three runs: the gate was scored by two of them, not "by one run only".
    assert ("its binary (gate) criterion scored by some runs only, so its gate is not known on every side: 1"
            in render_leaderboard_markdown(result))


def test_equal_means_summed_in_another_order_tie(tmp_path: Path) -> None:
    """Three runs deal the same scores {0, 0, 1, 2, 3, 3} on a 0..3 rubric to six criteria in three orders, on three
    instructions: every per-instruction mean is (0 + 0 + 1/3 + 2/3 + 1 + 1) / 6 = 1/2 exactly, but the float totals
    of 1/3 and 2/3 in another order differ in their last bit (B's 0.4999999999999999). By hand: every pair ties on
    every instruction, so each win rate is 1/2, each delta 0, no call, all three ranked 1 (on three instructions no
    pair can be called at all: the sign-flip test's smallest p, 2/2^3, is not below 0.05/3)."""
    scale = "0: плохо\n1: так себе\n2: средне\n3: хорошо"

    def run(name: str, scores: tuple[int, ...]) -> str:
        return str(write_rank_run(tmp_path / name, name, [(p, "m", c, scale, s) for p in (1, 2, 3)
                                                          for c, s in zip("UVWXYZ", scores)]))

    runs = [run("A", (1, 0, 2, 0, 3, 3)), run("B", (2, 3, 1, 0, 3, 0)), run("C", (3, 3, 2, 1, 0, 0))]
    result = leaderboard(runs, n_boot=200)
    assert [(m["rank"], m["mean"], m["win_rate"]) for m in result["models"]] == [(1, 0.5, 0.5)] * 3
    # Every difference is 0, per instruction and in every resample: every sign flip is as far from 0, p 1, and the
    # interval [0, 0] (unrounded, the last bit gave -1e-16 in every resample: p 0).
    assert [(p["delta"], p["ci"], p["win_rate_b"], p["verdict"], p["p_value"]) for p in result["pairs"]] == \
        [(0.0, [0.0, 0.0], 0.5, "—", 1.0)] * 3


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


def test_eight_candidates_draw_the_resamples_a_call_needs(tmp_path: Path) -> None:
    """Eight runs on 12 instructions: M0 scores X 2 everywhere, M1-M7 0 everywhere. m = 8 x 7 / 2 = 28 pairs, each at
    alpha / 28 = 0.05 / 28: a call needs 2 x 28 / 0.05 = 1120 resamples, more than the default 1000, which called
    nothing and ranked all eight 1 ("not told apart"). Now 1120 are drawn, and the settings say so. M0 against any
    other: B - A is -1 on all 12 instructions, the sign-flip p 2/2^12 = 1/2048 < 0.05/28 (the least n with
    2/2^n < 0.05/28 is 11), interval [-1, -1]: B lower. M1-M7 tie on every instruction: p 1, not distinguishable.
    Ranks: M0 1, the others 2."""
    runs = [str(_run(tmp_path / f"m{k}", f"M{k}", {p: 2.0 if k == 0 else 0.0 for p in range(1, 13)}))
            for k in range(8)]
    result = leaderboard(runs)
    assert (result["n_boot"], result["n_boot_asked"], result["n_pairs"]) == (1120, 1000, 28)
    assert [(m["model"], m["rank"]) for m in result["models"]] == [("M0", 1)] + [(f"M{k}", 2) for k in range(1, 8)]
    top = [p for p in result["pairs"] if p["a"] == runs[0]]
    assert len(top) == 7 and all((p["delta"], p["ci"], p["verdict"]) == (-1.0, [-1.0, -1.0], "B lower")
                                 for p in top)
    assert all(p["p_value"] == 1 / 2048 for p in top)
    rest = [p for p in result["pairs"] if p["a"] != runs[0]]
    assert {(p["verdict"], p["p_value"]) for p in rest} == {("no difference", 1.0)}
    assert result["models"][1]["indistinguishable_from"] == runs[2:] and result["models"][1]["untested_with"] == []
    md = render_leaderboard_markdown(result)
    assert "1120 paired resamples over instructions (--n-boot 1000 raised to the 1120 a call at alpha / 28 needs)" in md
    assert "(exact, all 4096 swaps)" in md


def test_a_gate_only_instruction_does_not_count_toward_a_call(tmp_path: Path) -> None:
    """P1: X (A 2, B 0, C 1) and the binary G 0; P2-P8: G 0 only. Eight shared instructions, but the means and win
    rates rest on P1 alone (a gate-only instruction has no non-binary score): the resamples were drawn over all eight,
    and the pairs called from one instruction ("B lower" with interval [-1/2, -1/2]). Now: no interval, no call,
    and why counts the one instruction with a non-binary score."""
    binary = "0: нет нарушения\n\n1: есть нарушение"
    runs = []
    for name, x in (("A", 2.0), ("B", 0.0), ("C", 1.0)):
        rows = [(1, "m", "X", SCALE, x)] + [(p, "m", "G", binary, 0.0) for p in range(1, 9)]
        runs.append(write_rank_run(tmp_path / name, name, rows))
    result = leaderboard(runs, n_boot=200)
    assert (result["n_instructions"], result["n_rated_instructions"], result["n_boot"]) == (8, 1, 0)
    assert result["why_no_interval"] == ("the runs share 1 instruction with a non-binary score every one scored; an "
                                         "interval needs at least 2")
    assert {p["verdict"] for p in result["pairs"]} == {"—"}
    assert {p["why_no_call"] for p in result["pairs"]} == {
        "rests on 1 instruction with a non-binary score scored by every run; an interval needs at least 2"}
    assert [m["rank"] for m in result["models"]] == [1, 1, 1]


def test_shared_binary_items_alone_say_no_non_binary_score(tmp_path: Path) -> None:
    """Three runs score only the binary G (0) on three instructions: every run scored every item, but the mean
    leaves binary criteria out, so there is none: the pairs' why says that, not that no item was scored."""
    binary = "0: нет нарушения\n\n1: есть нарушение"
    runs = [write_rank_run(tmp_path / n, n, [(p, "m", "G", binary, 0.0) for p in (1, 2, 3)]) for n in "ABC"]
    result = leaderboard(runs, n_boot=200)
    assert [m["mean"] for m in result["models"]] == [None, None, None]
    assert {p["why_no_call"] for p in result["pairs"]} == {
        "no non-binary score shared by every run (the mean leaves binary criteria out)"}


def test_a_judge_that_failed_every_gate_verdict_is_named(tmp_path: Path) -> None:
    """A and B score the binary Critical 0 and X on six instructions; C's Critical verdicts all lack a score. Every
    instruction's gate is known on some runs only, so each leaves every run: nothing is left, and the refusal says
    so and names C's six unparsed gate verdicts, not "no item every one of them scored" (every X was)."""
    gate = "0: нет\n\n1: да"

    def run(name: str, gate_score: float | None) -> str:
        rows = [row for p in range(1, 7) for row in ((p, "m", "Critical", gate, gate_score), (p, "m", "X", SCALE, 1.0))]
        return str(write_rank_run(tmp_path / name, name, rows))

    a, b, c = run("A", 0.0), run("B", 0.0), run("C", None)
    with pytest.raises(ValueError) as caught:
        leaderboard([a, b, c], n_boot=0)
    assert str(caught.value) == (
        "the runs have nothing left to compare: the 6 instructions every run scored were left out of every run because "
        "their binary (gate) criterion was scored by some runs only (a gate known on some sides only); gate verdicts "
        f"not scored: {c} 6 (unparsed 6)")


def test_a_tested_pair_not_called_shows_its_p_and_why(tmp_path: Path) -> None:
    """A and C: X 2 on P1-P6, 0 on P7-P8 (s / 2: mean 6/8 = 3/4); B: 0 on P1-P6, 1 on P7-P8 (mean 1/8).
    B - A per instruction: -1 on six, +1/2 on two; the observed sum -5. Sign flips: the six signed sum to S6 and the
    halves to H (-1, 0, 0, +1); |S6 + H| >= 5 when S6 = +-6 (2 x 4 = 8 swaps) or S6 = +-4 with H on its side
    (6 x 1 x 2 = 12): p = 20/256 = 0.078125, not below alpha/3 = 1/60 on 8 instructions (>= 7, so tested).
    A resample reaches B - A >= 0 only with six or more of its eight draws at P7/P8 (chance about 0.004), so the
    98.33% interval excludes 0; the pair reads "no difference", and the table now says why: its p."""
    a = _run(tmp_path / "a", "A", {p: 2.0 if p <= 6 else 0.0 for p in range(1, 9)})
    b = _run(tmp_path / "b", "B", {p: 0.0 if p <= 6 else 1.0 for p in range(1, 9)})
    c = _run(tmp_path / "c", "C", {p: 2.0 if p <= 6 else 0.0 for p in range(1, 9)})
    result = leaderboard([str(a), str(b), str(c)], n_boot=1000, seed=0)
    pair = next(p for p in result["pairs"] if (p["a"], p["b"]) == (str(a), str(b)))
    assert (pair["delta"], pair["p_value"], pair["verdict"]) == (-0.625, 20 / 256, "no difference")
    assert pair["ci"][1] < 0 and pair["win_rate_b"] == 0.25
    md = render_leaderboard_markdown(result)
    assert "| sign-flip p | B's win rate over A | call | why no call |" in md
    low, high = pair["ci"]
    assert (f"| -0.625 | [{low:.3f}, {high:.3f}] | 0.0781 | 0.250 | no difference | sign-flip p 0.0781 not below "
            "alpha/3 = 0.0167 |") in md
    # A and C are equal on every instruction: every flip as far from 0, p 1.
    assert "| +0.000 | [0.000, 0.000] | 1 | 0.500 | no difference | sign-flip p 1 not below alpha/3 = 0.0167 |" in md
    assert "sign-flip p 0.0781 not below alpha/3 = 0.0167" in render_leaderboard_page(result)


def test_raised_resamples_are_said_before_and_capped(tmp_path: Path, capsys) -> None:
    """Three candidates at alpha 0.05: a call at alpha/3 needs 2 x 3 / 0.05 = 120 resamples; --n-boot 100 is raised
    to 120 and stderr says so before the work. At alpha 1e-5 a call would need 600,000, over the 100,000 a board
    raises --n-boot to: refused (exit 2) in one line naming the --alpha that fits, 2 x 3 / 100,000 = 6e-05."""
    runs = [str(p) for p in _three(tmp_path)]
    assert leaderboard(runs, n_boot=100, seed=0)["n_boot"] == 120
    assert capsys.readouterr().err == ("judge-eval compare: --n-boot 100 raised to 120 resamples: a call at alpha / 3 "
                                       "= 0.0167 needs at least 2m / alpha\n")
    leaderboard(runs, n_boot=200, seed=0)
    assert capsys.readouterr().err == ""  # as many as asked: nothing to say
    assert main(["compare", *runs, "--alpha", "1e-5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("judge-eval compare: error: --alpha 1e-05: a call between 3 candidates at alpha / 3 needs 600000 "
                   "resamples, over the 100000 a leaderboard raises --n-boot 1000 to; give --alpha of at least 6e-05")
    # --n-boot 600000 is no way round it: compare refuses more than 100,000 resamples before reading a run.
    assert main(["compare", *runs, "--alpha", "1e-5", "--n-boot", "600000"]) == 2
    assert capsys.readouterr().err == ("judge-eval compare: error: --n-boot: must be at most 100,000 (the most "
                                       "resamples a leaderboard raises --n-boot to), got 600000\n")


def test_leaderboard_docstring_names_every_key(tmp_path: Path) -> None:
    """The Returns section of leaderboard() names every key of its result and of a model (``untested_with``,
    ``n_boot_asked``, ``call_test``, ``n_rated_instructions`` were missing)."""
    result = leaderboard([str(p) for p in _three(tmp_path)], n_boot=200, seed=0)
    returns = leaderboard.__doc__.split("Returns:")[1].split("Raises:")[0]
    assert [key for key in result if f'"{key}"' not in returns] == []
    assert [key for key in result["models"][0] if key not in returns] == []


def test_alpha_help_gives_the_leaderboard_level_and_fewest_instructions(capsys, monkeypatch) -> None:
    """--alpha's help: a leaderboard pair's interval is at 1 - alpha/m, and a call needs 2/2^n < alpha/m: 6
    instructions for two runs at 0.05 (2/64), 7 for three candidates (alpha/3 = 0.0167 > 2/128), 11 for eight
    (alpha/28 = 0.00179 > 2/2048 while 2/1024 = 0.00195 is not below it). Two rank runs' call reads the p
    Holm-adjusted over the tested cells, whose first step asks 2/2^n < alpha/m: 6 holds for one test only (it
    said 6 whatever the family's size), and the help says so."""
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option: argparse would otherwise wrap at a hyphen
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("paired intervals at 1 - alpha (a leaderboard pair's at 1 - alpha/m, m = K(K-1)/2); a rank call also "
            "needs a sign-flip p below alpha (for two rank runs Holm-adjusted over the tested cells; a board's pairs "
            "alpha/m): at 0.05, >= 6 instructions for one test, more for m tests (2/2^n below alpha/m: Holm's "
            "first step over two rank runs' m tested cells; 7 for a board of 3, 11 of 8) (default: 0.05).") in text


def test_an_alpha_no_board_can_reach_is_refused_before_any_run_is_read(tmp_path: Path, capsys, monkeypatch) -> None:
    """The refusal of --alpha 1e-5 for three candidates (600,000 resamples needed, as above) rests on K, alpha and
    --n-boot alone: it comes before any run is loaded (with 72 runs, minutes of loading came first)."""
    import eval.ranking.compare as compare

    runs = [str(p) for p in _three(tmp_path)]

    def no_load(folder):
        raise AssertionError(f"{folder} loaded before the refusal")

    monkeypatch.setattr(compare, "load_ranking_run", no_load)
    assert main(["compare", *runs, "--alpha", "1e-5"]) == 2
    assert capsys.readouterr().err.strip() == (
        "judge-eval compare: error: --alpha 1e-05: a call between 3 candidates at alpha / 3 needs 600000 resamples, "
        "over the 100000 a leaderboard raises --n-boot 1000 to; give --alpha of at least 6e-05")


def test_a_leaderboard_reads_each_runs_judge_settings_once(tmp_path: Path, monkeypatch) -> None:
    """K = 3 runs, 3 pairs: each run.json's judge settings are read once (3 reads), not twice per pair (6). A read of
    its own: test_ranking_calls_by_hand.py counts the instructions' reads, which a judge settings read per pair
    leaves at 3."""
    import eval.ranking.compare as compare

    runs = [str(p) for p in _three(tmp_path)]
    read = []
    original = compare.judge_settings

    def counted(folder):
        read.append(str(folder))
        return original(folder)

    monkeypatch.setattr(compare, "judge_settings", counted)
    leaderboard(runs, n_boot=0)
    assert sorted(read) == sorted(runs)


def test_a_win_rate_of_1_takes_the_exact_binomial_interval_when_asked(tmp_path: Path) -> None:
    """A beats both others on each of the 4 rated instructions (``test_leaderboard_by_hand``): win rate 1, and 1 in
    every resample, so the bootstrap's interval is [1, 1] whatever the number of instructions. Asked, it is the
    exact binomial (Clopper-Pearson) one of 4 wins in 4 at 1 - alpha = 95 %: its low end has P(K = 4) = p^4 = 0.025,
    p = 0.025^(1/4) = 0.39764. B's 5/16 is no bound: its interval stays the bootstrap's."""
    a, b, c = map(str, _three(tmp_path))
    default = leaderboard([a, b, c], n_boot=200, seed=0)
    exact = leaderboard([a, b, c], n_boot=200, seed=0, extreme_rate_interval="clopper-pearson")
    before, after = ({m["model"]: m for m in r["models"]} for r in (default, exact))
    assert before["A"]["win_rate_ci"] == [1.0, 1.0] and "win_rate_ci_method" not in before["A"]
    assert 0.025 ** (1 / 4) == pytest.approx(0.39764, abs=5e-6)
    assert after["A"]["win_rate_ci"] == [pytest.approx(0.025 ** (1 / 4), abs=1e-12), 1.0]
    assert after["A"]["win_rate_ci_method"] == "clopper-pearson"
    assert after["B"]["win_rate_ci"] == before["B"]["win_rate_ci"] and "win_rate_ci_method" not in after["B"]
    assert (default["extreme_rate_interval"], exact["extreme_rate_interval"]) == ("percentile", "clopper-pearson")
    assert default["percentile_method"] == "linear"
    said = render_leaderboard_markdown(default)
    assert ("win rate 1 on every rated instruction, and so in every resample: the interval [1, 1] has zero width "
            "whatever the number of instructions, which is no certainty") in said
    assert "the exact binomial (Clopper-Pearson) one over those instructions" in render_leaderboard_markdown(exact)


def test_the_extreme_rate_flag_is_refused_where_no_rate_has_an_interval(tmp_path: Path, capsys) -> None:
    """compare of two rank runs has no win rate: the flag would change nothing, so it is refused (exit 2, nothing
    written), as on score of a pointwise run; a board of three takes it."""
    a, b, c = map(str, _three(tmp_path))
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["compare", a, b, "--out", str(out), "--extreme-rate-interval", "clopper-pearson"]) == 2
    assert capsys.readouterr().err == (
        "judge-eval compare: error: --extreme-rate-interval: only a leaderboard (three or more rank runs) has rates "
        "with an interval, its win rates; leave the flag out\n")
    assert not out.exists()
    assert main(["compare", a, b, c, "--out", str(out), "--n-boot", "200", "--extreme-rate-interval",
                 "clopper-pearson"]) == 0
    written = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert written["extreme_rate_interval"] == "clopper-pearson"


def test_the_exact_binomial_win_rate_interval_is_at_the_boards_level(tmp_path: Path) -> None:
    """At --alpha 0.1 the interval of A's 4 wins in 4 is the 90 % exact one: P(K = 4) = p^4 = 0.05 at its low end,
    p = 0.05^(1/4) = 0.47287, not the 95 % one's 0.39764."""
    a, b, c = map(str, _three(tmp_path))
    exact = leaderboard([a, b, c], n_boot=200, seed=0, alpha=0.1, extreme_rate_interval="clopper-pearson")
    (top,) = [m for m in exact["models"] if m["model"] == "A"]
    assert 0.05 ** (1 / 4) == pytest.approx(0.47287, abs=5e-6)
    assert top["win_rate_ci"] == [pytest.approx(0.05 ** (1 / 4), abs=1e-12), 1.0]
