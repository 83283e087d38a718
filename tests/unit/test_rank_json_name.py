"""The ranking's result is ``rank.json``: ``judge-eval rank`` writes it (never ``bench.json``, the name it had, which
is for performance scripts now), and a folder ranked before the rename, holding ``bench.json``, is still read as it
is by ``compare``, the leaderboard and ``score``'s refusal, each going through ``eval.ranking.rank.ranking_result``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.compare import compare_rankings
from eval.ranking.leaderboard import leaderboard
from eval.ranking.rank import EARLIER_RANKING_RESULT, NOT_A_RANKING, RANKING_RESULT, ranking_result
from tests.support.eval_ranking import Candidate, Judge, rank_argv, scores_by_output, write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"


def _run(folder: Path, model: str, scores: dict[int, float]) -> Path:
    """A ranking folder of one criterion X (meta m), ``scores`` per prompt_id, its result under the new name."""
    return write_rank_run(folder, model, [(p, "m", "X", SCALE, score) for p, score in scores.items()])


def _as_before_the_rename(folder: Path) -> Path:
    """``folder`` as a rank run before the rename left it: the same result, named bench.json."""
    (folder / RANKING_RESULT).rename(folder / EARLIER_RANKING_RESULT)
    return folder


def test_the_names() -> None:
    assert (RANKING_RESULT, EARLIER_RANKING_RESULT) == ("rank.json", "bench.json")


def test_rank_writes_rank_json_and_a_rerun_replaces_an_old_bench_json(tmp_path: Path, data: Path) -> None:
    """A fresh folder gets rank.json alone, and run.json the ranking's settings under ``rank``. Rerun on a folder
    ranked before the rename, it writes rank.json and removes the bench.json it replaces, which would otherwise
    keep the earlier matrix under the name a script of before the rename reads."""
    out = tmp_path / "run"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--n-boot", "0")) == 0
        assert (out / "rank.json").is_file() and not (out / "bench.json").exists()
        run_json = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert run_json["rank"]["model"] == "cand-model" and "bench" not in run_json
        first = json.loads((out / "rank.json").read_text(encoding="utf-8"))

        _as_before_the_rename(out)
        run_json["bench"] = run_json.pop("rank")  # the section's name then
        (out / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--n-boot", "0")) == 0
    assert (out / "rank.json").is_file() and not (out / "bench.json").exists()
    run_json = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run_json["rank"]["model"] == "cand-model" and "bench" not in run_json  # not left beside it
    assert json.loads((out / "rank.json").read_text(encoding="utf-8"))["matrix"] == first["matrix"]


def test_score_refuses_a_rank_folder_of_before_the_rename_naming_its_bench_json(tmp_path: Path, data: Path,
                                                                                capsys) -> None:
    """The refusal of before the rename, word for word, for a folder that holds bench.json."""
    out = tmp_path / "run"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--n-boot", "0")) == 0
    _as_before_the_rename(out)
    capsys.readouterr()
    assert main(["score", "--predictions", str(out), "--n-boot", "0", "--vc-repeats", "5", "--no-plots"]) == 2
    assert capsys.readouterr().err == (
        f"judge-eval score: error: --predictions {out}: a folder written by `judge-eval rank` (it holds bench.json), "
        "which scores its own verdicts: the ranking is in its report.html and bench.json, and `judge-eval rank` on "
        "the same --out scores it again; `judge-eval score` scores a folder written by `judge-eval run`\n")
    assert (out / "bench.json").is_file() and not (out / "rank.json").exists()  # the folder left as it was


def test_compare_reads_a_bench_json_as_it_read_it_before(tmp_path: Path) -> None:
    """Two runs compared, then one of them renamed to bench.json: the same comparison, by the API and the CLI."""
    a = _run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 9)})
    b = _run(tmp_path / "b", "B", {p: float(p % 3) for p in range(1, 9)})
    before = compare_rankings(a, b, n_boot=200, seed=0)
    _as_before_the_rename(a)
    assert ranking_result(a) == a / "bench.json" and ranking_result(b) == b / "rank.json"
    assert compare_rankings(a, b, n_boot=200, seed=0) == before
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--n-boot", "200"]) == 0
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))["a"]["model"] == "A"


def test_the_leaderboard_reads_bench_json_as_it_read_it_before(tmp_path: Path) -> None:
    runs = [_run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 9)}),
            _run(tmp_path / "b", "B", {p: 1.0 for p in range(1, 9)}),
            _run(tmp_path / "c", "C", {p: float(p % 3) for p in range(1, 9)})]
    before = leaderboard(runs, n_boot=200, seed=0)
    for folder in runs[:2]:
        _as_before_the_rename(folder)
    assert leaderboard(runs, n_boot=200, seed=0) == before


def test_a_folder_holding_both_is_read_by_the_one_written_last(tmp_path: Path) -> None:
    """An older checkout's rerun writes only bench.json; a rerun of this one cut before it removed bench.json leaves
    that file the older one."""
    import os

    a = _run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 9)})
    b = _run(tmp_path / "b", "B", {p: 1.0 for p in range(1, 9)})
    (a / "bench.json").write_text(json.dumps({"model": "stale", "matrix": {"normalize": "none"}}), encoding="utf-8")
    os.utime(a / "bench.json", ns=(10**18, 10**18))
    os.utime(a / "rank.json", ns=(2 * 10**18, 2 * 10**18))
    assert ranking_result(a) == a / "rank.json"
    assert compare_rankings(a, b, n_boot=0)["a"]["model"] == "A"
    os.utime(a / "bench.json", ns=(3 * 10**18, 3 * 10**18))
    assert ranking_result(a) == a / "bench.json"


@pytest.mark.parametrize("runs", [2, 3])
def test_a_folder_with_neither_is_refused_naming_both(tmp_path: Path, runs: int) -> None:
    folders = [_run(tmp_path / name, name, {p: 1.0 for p in range(1, 9)}) for name in "abc"[:runs]]
    (folders[-1] / "rank.json").unlink()
    assert ranking_result(folders[-1]) is None
    with pytest.raises(ValueError) as caught:
        compare_rankings(*folders, n_boot=0) if runs == 2 else leaderboard(folders, n_boot=0)
    assert str(caught.value) == f"{folders[-1]}: {NOT_A_RANKING}"
    assert "rank.json" in NOT_A_RANKING and "bench.json" in NOT_A_RANKING
