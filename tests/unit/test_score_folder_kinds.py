"""``judge-eval score`` on folders it should not read as an unfinished run: a folder ``judge-eval rank`` wrote is
refused before anything in it is touched, and a run whose own ``--limit`` or ``--split`` left items out says so,
calling the run unfinished only for the items it selected and did not judge."""

from __future__ import annotations

import json
from pathlib import Path

from eval.cli import main
from eval.reports.notes import run_notes
from judge.metrics_json.metrics import Metrics
from tests.support.eval_cli import cut_predictions_to, run_args
from tests.support.eval_ranking import Candidate, Judge, rank_argv, scores_by_output
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

GOOD = "[FEEDBACK] ok [RESULT] 1 [END]"


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` by its relative path: its bytes and modification time."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _selection(metrics: dict) -> dict:
    """metrics.json's notes on the items the run's own --split or --limit left without a prediction."""
    return {k: v for k, v in metrics["notes"].items()
            if k in ("n_missing_unselected", "unselected_split", "unselected_limit")}


def _score(*args: str) -> int:
    return main(["score", *args, "--n-boot", "0", "--vc-repeats", "5", "--no-plots"])


def _rank_refusal(predictions: Path, folder: Path) -> str:
    where = "" if predictions == folder else f" (in {folder})"
    return (f"judge-eval score: error: --predictions {predictions}{where}: a folder written by `judge-eval rank` "
            "(it holds rank.json), which scores its own verdicts: the ranking is in its report.html and rank.json, "
            "and `judge-eval rank` on the same --out scores it again; `judge-eval score` scores a folder written by "
            "`judge-eval run`\n")


def test_a_rank_folder_is_refused_and_left_as_it_was(tmp_path, data, capsys):
    """A real ranking's folder (its report.html, rank.json, run.json, predictions.jsonl, ...): score refuses it in
    one line, exit 2, whether given the folder or its predictions.jsonl, with or without --out, and no file in it
    is written, added or changed (scoring it replaced the ranking's report.html with a judge report of 0 items)."""
    out = tmp_path / "rank"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    before = _files(out)
    assert {"rank.json", "report.html", "run.json", "predictions.jsonl", "items.jsonl"} <= before.keys()
    capsys.readouterr()
    elsewhere = tmp_path / "elsewhere"
    for predictions, extra in ((out, ()), (out / "predictions.jsonl", ()), (out, ("--out", str(elsewhere)))):
        assert _score("--predictions", str(predictions), *extra) == 2
        said = capsys.readouterr()
        assert said.err == _rank_refusal(predictions, out)
        assert said.out == ""
    assert _files(out) == before
    assert not elsewhere.exists()


def _limited_run(folder: Path, data: Path, *flags: str) -> Path:
    with ScriptedEndpoint(vllm_chat(GOOD)) as server:
        assert main(run_args(server.base_url, data, folder, *flags)) == 0
    return folder


def _notes_said(folder: Path, capsys, sentence: str) -> dict:
    """Score the run (its data as its run.json names it) and check the console, report.md, report.html and a
    reading of metrics.json (as compare reads it) all say ``sentence`` (Markdown); returns metrics.json."""
    capsys.readouterr()
    assert _score("--predictions", str(folder)) == 0
    plain = sentence.replace("**", "").replace("`", "")
    assert plain in capsys.readouterr().out.splitlines()
    assert sentence in (folder / "report.md").read_text(encoding="utf-8").splitlines()
    page = sentence.replace("**", "<b>", 1).replace("**", "</b>", 1)
    while "`" in page:
        page = page.replace("`", "<code>", 1).replace("`", "</code>", 1)
    assert f'<p class="warn">{page}</p>' in (folder / "report.html").read_text(encoding="utf-8")
    written = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert run_notes(Metrics.from_json(written))[0] == sentence
    return written


def test_a_limited_run_says_its_limit_not_that_it_is_unfinished(tmp_path, small_data, capsys):  # noqa: F811
    """`run --limit 3` on 12 items: the 9 beyond the limit were never to be judged. Cut to 2 predictions, the
    third selected item is the run's unfinished part, said apart from the 9."""
    path, records = small_data
    run = _limited_run(tmp_path / "run", path, "--limit", "3")
    written = _notes_said(run, capsys, "**9 items have no prediction** (the run judged only the first 3: "
                                       "`--limit 3`): they are not in `n`.")
    assert _selection(written) == {"unselected_limit": 3, "n_missing_unselected": 9}
    assert written["splits"]["all"]["overall"]["n_missing"] == 9
    for report in ("report.md", "report.html"):  # nor in any cell's words on why it has no score
        assert "the run is unfinished" not in (run / report).read_text(encoding="utf-8"), report

    cut_predictions_to(run, 2)
    written = _notes_said(run, capsys, "**10 items have no prediction** (the run judged only the first 3: "
                                       "`--limit 3`; 1 of those has none yet: the run is unfinished): they are not "
                                       "in `n`.")
    assert _selection(written) == {"unselected_limit": 3, "n_missing_unselected": 9}


def test_a_run_of_one_split_and_a_limit_names_both(tmp_path, small_data, capsys):  # noqa: F811
    """`--split standard --limit 2` on 6 Zero-Shot + 6 Standard items: 6 left out by the split, 4 by the limit.
    The Zero-Shot test, with no prediction at all, says why its cell is empty in words true of it."""
    path, _ = small_data
    run = _limited_run(tmp_path / "run", path, "--split", "standard", "--limit", "2")
    written = _notes_said(run, capsys, "**10 items have no prediction** (the run judged only the first 2 standard "
                                       "items: `--split standard --limit 2`): they are not in `n`.")
    assert _selection(written) == {"unselected_split": "standard", "unselected_limit": 2, "n_missing_unselected": 10}
    assert written["splits"]["zero_shot"]["overall"]["why_empty_text"] == (
        "no scored item: 6 no prediction (an unfinished run, or outside its --limit or --split)")


def test_a_limit_that_left_nothing_out_is_not_named(tmp_path, small_data, capsys):  # noqa: F811
    """`--limit 50` on 12 items selects them all: a run cut to 8 predictions is unfinished, and no limit is named
    (nor is one written into metrics.json)."""
    path, _ = small_data
    run = _limited_run(tmp_path / "run", path, "--limit", "50")
    cut_predictions_to(run, 8)
    written = _notes_said(run, capsys, "**4 items have no prediction** (the run is unfinished): they are not in `n`.")
    assert _selection(written) == {}


def test_an_out_holding_another_run_is_refused_and_left_as_it_was(tmp_path, small_data, capsys):  # noqa: F811
    """`score --predictions A --out B` where B is another judge's run folder wrote A's metrics.json and reports over
    B's, and `compare` then read A's figures under B's name. Refused, exit 2, naming the file that marks B as a run
    (its predictions.jsonl; a training run's run.json too), and nothing in B is written; --out the run's own folder
    (by another spelling) and a fresh folder both score."""
    path, _ = small_data
    first, second = _limited_run(tmp_path / "a", path), _limited_run(tmp_path / "b", path)
    assert _score("--predictions", str(second)) == 0
    before = _files(second)
    capsys.readouterr()
    assert _score("--predictions", str(first), "--out", str(second)) == 2
    said = capsys.readouterr()
    assert said.err == (f"judge-eval score: error: --out {second}: holds another run (its predictions.jsonl), whose "
                        f"reports this would replace with {first}'s; leave --out out to write beside the "
                        "predictions, or give a folder of its own\n")
    assert said.out == "" and _files(second) == before
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "run.json").write_text(json.dumps({"job": "judge-train run", "config": {}}), encoding="utf-8")
    assert _score("--predictions", str(first), "--out", str(trained)) == 2
    assert "holds another run (its run.json)" in capsys.readouterr().err
    assert sorted(p.name for p in trained.iterdir()) == ["run.json"]
    assert _score("--predictions", str(first / "predictions.jsonl"), "--out", f"{first}/") == 0
    assert _score("--predictions", str(first), "--out", str(tmp_path / "fresh")) == 0
    assert (first / "metrics.json").is_file() and (tmp_path / "fresh" / "metrics.json").is_file()
