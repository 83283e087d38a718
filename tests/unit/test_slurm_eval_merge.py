"""slurm/eval_merge.sbatch's merge (`judge-eval merge`, eval/judging/shards.py): the shards' predictions and their
common run.json in one folder, and shards judged alike or refused. No cluster, no judge: hand-written shards."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from eval.cli import main as eval_main
from eval.judging.shards import ShardMismatch, merge_shards
from judge.wire import root_identity
from tests.support.console_scripts import path_with_console_scripts
from tests.support.two_formula_export import retrain, two_formula_export

REPO = Path(__file__).resolve().parents[2]
SLURM_DIR = REPO / "slurm"


def _record(shard: Path, n_items: int, **config) -> dict:
    """A run.json as `judge-eval run` writes it, cut to the keys that matter here."""
    return {"job": "judge-eval run",
            "config": {"judge": "http://n1:8000/v1", "data": str(shard / "data.jsonl"), "out": str(shard),
                       "verdict_format": "integer", "prompt": "ru", "max_tokens": 1024, "overwrite": False,
                       "progress": False, **config},
            "git_revision": "abc123", "prompt_version": "pollux-ru-4b-v1", "backend": "chat", "model": "pollux-4b",
            "launch": {"argv": ["judge-eval", "run"], "pid": 100 + n_items}, "earlier_launches": [],
            "n_items": n_items, "weights_fingerprint": "f00d"}


def _shards(tmp_path: Path, ids: list[list[str]], configs: list[dict] | None = None) -> tuple[Path, list[Path]]:
    """Shard folders 0..K-1 under tmp_path/out/shards, each with predictions of score 1 for its ids and a run.json;
    the data: the bundled sample's records of those ids."""
    import judge

    wanted = {i for block in ids for i in block}
    lines = [line for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()
             if line.strip() and json.loads(line)["id"] in wanted]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dirs = []
    for k, block in enumerate(ids):
        shard = tmp_path / "out" / "shards" / str(k)
        shard.mkdir(parents=True)
        rows = [{"id": i, "judge": "pollux-4b", "raw_output": "1", "feedback": "", "score": 1.0, "parse_ok": True,
                 "error": None, "reason": "", "score_source": "verdict", "in_scale": True} for i in block]
        (shard / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        if block:
            record = _record(shard, len(block), **((configs or [{}] * len(ids))[k]))
            (shard / "run.json").write_text(json.dumps(record), encoding="utf-8")
        dirs.append(shard)
    return data, dirs


def _sample_ids(n: int) -> list[str]:
    import judge

    lines = judge.sample_data_path().read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["id"] for line in lines if line.strip()][:n]


def test_merge_writes_the_shards_common_run_json_and_score_reads_the_integer_format(tmp_path, capsys):
    """Two shards of an integer judge (and an empty third: more tasks than records) merge into one folder whose
    run.json says integer: score then leaves POLLUX's evaluator out (it reads [RESULT] tags; an integer judge read
    0 % format accuracy there) and names the judge's settings, as for a run judged in one folder."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:], []])
    out = tmp_path / "out"
    assert eval_main(["merge", "--data", str(data), "--out", str(out), *map(str, dirs)]) == 0
    assert capsys.readouterr().out == (f"merged 4 predictions from 3 shards -> {out / 'predictions.jsonl'}, "
                                       f"{out / 'run.json'}\n")
    merged_ids = [json.loads(line)["id"] for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert merged_ids == ids  # shard 0's rows, then shard 1's
    record = json.loads((out / "run.json").read_text())
    assert record["config"] == {"judge": "http://n1:8000/v1", "data": str(data), "out": str(out),
                                "verdict_format": "integer", "prompt": "ru", "max_tokens": 1024}
    assert (record["n_items"], record["model"], record["prompt_version"]) == (4, "pollux-4b", "pollux-ru-4b-v1")
    assert [s["folder"] for s in record["shards"]] == [str(dirs[0]), str(dirs[1])]
    assert [s["launch"]["pid"] for s in record["shards"]] == [102, 102] and "launch" not in record

    assert eval_main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data), "--out",
                      str(out), "--n-boot", "0", "--vc-repeats", "2"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["run"] == {"backend": "chat", "model": "pollux-4b", "prompt_version": "pollux-ru-4b-v1",
                              "git_revision": "abc123", "verdict_format": "integer"}
    assert "pollux_official" not in metrics  # present (format_acc 0.000) when the run.json is missing


@pytest.mark.parametrize(("config", "key", "odd", "first"), [
    ({"verdict_format": "tagged"}, "config.verdict_format", '"tagged"', '"integer"'),
    ({"max_tokens": 512}, "config.max_tokens", "512", "1024"),
    ({"judge": "/shared/runs/other/export"}, "config.judge", '"/shared/runs/other/export"', '"http://n1:8000/v1"'),
])  # fmt: skip
def test_shards_judged_with_different_settings_are_refused_naming_the_key(tmp_path, capsys, config, key, odd, first):
    """A shard rerun with another setting (JUDGE_EVAL_SHARDS=2 sbatch --array=1 ... with another config) would be
    scored as the same judge as the other: exit 2, one line naming the key, both values and both files; nothing
    written. A checkpoint judge at another path than the URL the others used is another judge too."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]], configs=[{}, config])
    out = tmp_path / "out"
    assert eval_main(["merge", "--data", str(data), "--out", str(out), *map(str, dirs)]) == 2
    err = capsys.readouterr().err
    assert err == (f"judge-eval merge: error: {dirs[1] / 'run.json'}: {key} is {odd}, but {first} in "
                   f"{dirs[0] / 'run.json'}: the shards were judged with different settings; rerun the odd shard "
                   "with the others' settings (--overwrite), or merge only shards judged alike\n")
    assert not (out / "predictions.jsonl").exists() and not (out / "run.json").exists()


def test_a_shard_rerun_through_another_serve_job_merges(tmp_path):
    """Another URL alone (a dead task rerun through a new serve job of the same model: same served name and weights
    fingerprint) is no other judge: merged, each shard's address kept under shards, none claimed for the run."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]], configs=[{}, {"judge": "http://n2:8111/v1"}])
    rows, run_json, _ = merge_shards(dirs, data, tmp_path / "out")
    record = json.loads(run_json.read_text())
    assert rows == 4 and "judge" not in record["config"]
    assert [s["judge"] for s in record["shards"]] == ["http://n1:8000/v1", "http://n2:8111/v1"]


def test_a_shard_with_predictions_and_no_run_json_is_refused(tmp_path):
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    (dirs[1] / "run.json").unlink()
    with pytest.raises(ShardMismatch, match=rf"^{dirs[1] / 'run.json'}: no such file beside the shard's predictions"):
        merge_shards(dirs, data, tmp_path / "out")


def test_eval_merge_sbatch_runs_the_merge_and_stops_on_a_mismatch(tmp_path):
    """The script itself: with matching shards it writes run.json beside the merged predictions before scoring; with
    a shard of another verdict format it stops (exit 2) and scores nothing. srun runs its command, as on a node."""
    ids = _sample_ids(4)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text('#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\n'
                                  'echo "score $*" >"$FAKE_SCORE"\n')
    (bin_dir / "srun").chmod(0o755)
    for case, configs in (("same", [{}, {}]), ("odd", [{}, {"verdict_format": "tagged"}])):
        root = tmp_path / case
        root.mkdir()
        data, dirs = _shards(root, [ids[:2], ids[2:]], configs=configs)
        (root / "out" / "shards" / "count").write_text("2\n")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
               "PATH": path_with_console_scripts("judge-eval", before=[bin_dir]),
               "FAKE_SCORE": str(root / "score"), "SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "n1",
               "SLURM_SUBMIT_DIR": str(root), "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "out"}
        proc = subprocess.run(["bash", str(SLURM_DIR / "eval_merge.sbatch"), "--n-boot", "0"], env=env,
                              capture_output=True, text=True, timeout=120)
        if case == "same":
            assert proc.returncode == 0, proc.stderr
            assert json.loads((root / "out" / "run.json").read_text())["config"]["data"] == str(data)
            assert (root / "score").read_text().split()[-2:] == ["--n-boot", "0"]
        else:
            assert proc.returncode == 2, proc.stderr
            assert "config.verdict_format is \"tagged\"" in proc.stderr and not (root / "score").exists()
            assert not (root / "out" / "run.json").exists()


def test_the_criteria_auto_counts_of_the_shards_are_summed_not_compared(tmp_path):
    """A --criteria auto array: each shard's run.json counts its own rows by choice level and on a Zero-Shot task, so
    they differ between shards and were refused as "judged with different settings". They are the shard's own, summed
    in the merged run.json. By hand: leaf 2 + 1, fallback 0 + 1, Zero-Shot 1 + 0."""
    from eval.judging.shards import merged_record

    shard0, shard1 = tmp_path / "0", tmp_path / "1"
    first = {**_record(shard0, 2), "task_choice_levels": {"leaf": 2, "fallback": 0}, "task_choice_zero_shot": 1}
    second = {**_record(shard1, 2), "task_choice_levels": {"leaf": 1, "fallback": 1}, "task_choice_zero_shot": 0}
    merged = merged_record([(shard0, first), (shard1, second)], tmp_path / "data.jsonl", tmp_path / "out")
    assert merged["task_choice_levels"] == {"leaf": 3, "fallback": 1}
    assert (merged["task_choice_zero_shot"], merged["n_items"]) == (1, 4)


# --- each shard read as score reads predictions: a bad row named by its shard, never merged ----------------------


def _merge(tmp_path: Path, dirs: list[Path], data: Path, capsys, *flags: str) -> tuple[int, str]:
    capsys.readouterr()
    code = eval_main(["merge", "--data", str(data), "--out", str(tmp_path / "out"), *flags, *map(str, dirs)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("line", "said"), [
    (b"garbage not json\n", "2: not a JSON line (Expecting value at column 1)"),
    (b"\xff\xfe{}\n", "line 2: not UTF-8 text (byte 0xff at column 1)"),
    (b'{"judge": "pollux-4b"}\n', "line 2.id: "),
    # score refused it later naming the merged file, a 0-based row and no field
    (b'{"id": "x", "feedback": "\\ud800"}\n', "line 2.feedback: not valid Unicode text: a lone surrogate (U+D800"),
])  # fmt: skip
def test_a_shard_row_that_is_no_prediction_is_named_by_its_shard_file_and_line(tmp_path, capsys, line, said):
    """A shard's second line that is no prediction was copied into the merged file and counted ("merged 11
    predictions" with garbage among them); score then named a line of the merged file and advised a rerun of a
    folder no run wrote. Now: exit 2, the shard's own file and line, and no merged file."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    shard = dirs[1] / "predictions.jsonl"
    first, second = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(first + line + second)
    code, err = _merge(tmp_path, dirs, data, capsys)
    assert code == 2
    assert err.startswith(f"judge-eval merge: error: {shard}{':' if said[0].isdigit() else ': '}{said}")
    assert err.count("\n") == 1
    assert not (tmp_path / "out" / "predictions.jsonl").exists() and not (tmp_path / "out" / "run.json").exists()


def test_a_torn_last_line_of_a_shard_is_refused_naming_the_shard(tmp_path, capsys):
    """A shard whose task was killed mid-write and not rerun ends in a cut row: the merge ended it with a newline, a
    bad line mid-file that score refused naming the merged file. Refused, naming the shard and what to do; a whole
    last row without its newline (the journal's rule) is a row and merges."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    shard = dirs[0] / "predictions.jsonl"
    whole = shard.read_bytes()
    shard.write_bytes(whole[:-40])
    code, err = _merge(tmp_path, dirs, data, capsys)
    assert code == 2
    assert err == (f"judge-eval merge: error: {shard}: its last line is torn (no newline, not a whole row: the "
                   "shard's task was killed mid-write); rerun that shard's array task, which resumes it, then merge "
                   "again\n")
    assert not (tmp_path / "out" / "predictions.jsonl").exists()
    shard.write_bytes(whole[:-1])  # the last row whole, its newline missing
    assert merge_shards(dirs, data, tmp_path / "out")[0] == 4


def test_an_id_two_shards_hold_is_refused_naming_both(tmp_path, capsys):
    """Overlapping shards (an array resubmitted with another shard count) and one shard given twice merged with
    exit 0 and "merged 6 predictions"; score then advised a rerun the merged folder cannot take. Refused, naming
    the id and both shards' files."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:3], ids[1:]])
    code, err = _merge(tmp_path, dirs, data, capsys)
    first, second = dirs[0] / "predictions.jsonl", dirs[1] / "predictions.jsonl"
    assert code == 2
    assert err.startswith(f"judge-eval merge: error: {second}: id {ids[1]!r} is in {first} too (the shards overlap: "
                          "a row held twice by --data, its copies in two blocks;")
    assert not (tmp_path / "out" / "predictions.jsonl").exists()
    code, err = _merge(tmp_path, [dirs[0], dirs[0]], data, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {dirs[0]}: given twice (as {dirs[0]} too); give each shard "
                              "once\n")
    same = dirs[1] / "predictions.jsonl"  # one shard holding an id twice
    same.write_text(same.read_text() + same.read_text().splitlines(keepends=True)[0])
    code, err = _merge(tmp_path, [dirs[1]], data, capsys, "--allow-missing-shards")  # shard 0 left out on purpose
    assert code == 2 and err.startswith(f"judge-eval merge: error: {same}: id {ids[1]!r} is twice in this shard")


def test_shards_judged_with_criteria_auto_are_refused_naming_the_shard(tmp_path, capsys):
    """--criteria auto shards: each classified its own block (an id-less row named by its line there) and recorded
    its own expanded rows, and score reads the raw rows, which have no criterion; no merged record says which rows
    were expanded. Refused before anything is written, naming the shard and what to run instead."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]], configs=[{"criteria": "auto"}] * 2)
    code, err = _merge(tmp_path, dirs, data, capsys)
    assert code == 2
    assert err.startswith(f"judge-eval merge: error: {dirs[0] / 'run.json'}: judged with --criteria auto")
    assert "one `judge-eval run --criteria auto`" in err
    assert not (tmp_path / "out" / "predictions.jsonl").exists() and not (tmp_path / "out" / "run.json").exists()


def test_a_data_file_that_is_not_there_is_refused(tmp_path, capsys):
    """merge --help promises exit 2 for a missing file; --data /nonexistent merged (exit 0) and wrote it into
    run.json, and the score job failed later."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    missing = tmp_path / "nonexistent.jsonl"
    code, err = _merge(tmp_path, dirs, missing, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: --data {missing}: no such file; give the JSONL file the "
                              "shards were cut from\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert _merge(tmp_path, dirs, empty, capsys)[0] == 2
    assert not (tmp_path / "out" / "predictions.jsonl").exists()


def test_a_shard_run_json_holding_no_record_is_said_so(tmp_path, capsys):
    """A run.json holding {} was reported as "no such file beside the shard's predictions"."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    (dirs[1] / "run.json").write_text("{}")
    code, err = _merge(tmp_path, dirs, data, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {dirs[1] / 'run.json'}: not a run record (no config "
                              "object, as `judge-eval run` writes); rerun the shard\n")


@pytest.mark.parametrize(("key", "value", "said"), [
    ("task_choice_levels", {"leaf": [1]}, 'task_choice_levels.leaf is [1], not a whole number of rows'),
    ("task_choice_levels", {"leaf": "abc"}, 'task_choice_levels.leaf is "abc", not a whole number of rows'),
    ("task_choice_levels", [1, 2], "task_choice_levels is [1, 2], not an object of counts by level"),
    ("n_items", "3", 'n_items is "3", not a whole number of rows'),
    ("config.judge", ["a"], 'config.judge is ["a"], not a judge\'s name, folder or URL'),
    ("model", "\ud800", "model holds a lone surrogate (U+D800: a JSON \\u escape with no pair), which is no Unicode "
                        "text; mend the file or write it again"),
])  # fmt: skip
def test_a_shard_run_json_value_no_run_writes_is_refused_before_anything_is_written(tmp_path, capsys, key, value,
                                                                                    said):
    """Counts the merge sums that were no numbers, a judge that was a list: a traceback (exit 1) naming no file.
    A lone surrogate (a JSON \\ud800 escape) in a shard's model: the merge replaced an earlier merge's
    predictions.jsonl, then failed on run.json with "'utf-8' codec can't encode", naming no file. Each is refused
    naming the shard's run.json and the key, and the earlier merge's files are left as they were."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    assert merge_shards(dirs, data, tmp_path / "out")[0] == 4
    before = {name: (tmp_path / "out" / name).read_bytes() for name in ("predictions.jsonl", "run.json")}
    (dirs[1] / "predictions.jsonl").write_text(  # the new merge would write other rows
        (dirs[1] / "predictions.jsonl").read_text().replace('"score": 1.0', '"score": 2.0'))
    record = json.loads((dirs[1] / "run.json").read_text())
    if key.startswith("config."):
        record["config"][key.split(".")[1]] = value
    else:
        record[key] = value
    (dirs[1] / "run.json").write_text(json.dumps(record))
    code, err = _merge(tmp_path, dirs, data, capsys)
    assert code == 2 and err.startswith(f"judge-eval merge: error: {dirs[1] / 'run.json'}: {said}")
    assert err.count("\n") == 1
    assert {name: (tmp_path / "out" / name).read_bytes() for name in before} == before


def test_an_out_folder_whose_name_is_not_utf8_is_refused_before_anything_is_written(tmp_path, capsys):
    """A merge into a folder named with a byte that is no UTF-8 wrote a run.json recording it as an escape no reader
    takes back (score then refused it, and "write it again" wrote the same). Refused up front, naming the bytes."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    out = tmp_path / os.fsdecode(b"merged\xff")
    capsys.readouterr()
    assert eval_main(["merge", "--data", str(data), "--out", str(out), *map(str, dirs)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judge-eval merge: error: --out {os.fsencode(out)!r}: a path whose name is not UTF-8 text")
    assert err.count("\n") == 1 and not out.exists()


def _served(shard: Path, root: str | None, fingerprint: str | None, judge_ref: str | None = None) -> None:
    """Set what the shard's server said of its weights (its model entry's root, judge-serve's fingerprint) in its
    run.json, and the judge it was given."""
    record = json.loads((shard / "run.json").read_text())
    record["server_limits"] = {"max_model_len": 4096, "root": root}
    record["weights_fingerprint"] = fingerprint
    if judge_ref is not None:
        record["config"]["judge"] = judge_ref
    (shard / "run.json").write_text(json.dumps(record))


@pytest.mark.parametrize(("roots", "prints"), [
    (["/shared/runs/x/export", "/scratch/copy/export"], ["f00d", "f00d"]),  # a new serve job, another path: same weights
    (["/shared/runs/x/export", root_identity("/shared/runs/x/export")], [None, None]),  # a path, then its digest
])  # fmt: skip
def test_shards_whose_servers_loaded_one_judge_merge_as_their_resume_does(tmp_path, roots, prints):
    """`judge-eval run` resumes a shard through a server that loaded the same weights by another path (the same
    fingerprint), or says the same folder as judge-serve's digest of the path an older server named
    (eval.judging.format_choice.held_root), and records the new root: the merge refused those shards on
    server_limits.root. Merged; the record keeps the first shard's root."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    for shard, root, fingerprint in zip(dirs, roots, prints):
        _served(shard, root, fingerprint)
    rows, run_json, _ = merge_shards(dirs, data, tmp_path / "out")
    record = json.loads(run_json.read_text())
    assert rows == 4 and record["server_limits"]["root"] == roots[0]


@pytest.mark.parametrize(("roots", "prints", "key"), [
    (["/shared/runs/x/export", "/shared/runs/y/export"], [None, None], "server_limits.root"),
    (["/shared/runs/x/export", "/scratch/copy/export"], ["f00d", "beef"], "weights_fingerprint"),
    (["/shared/runs/x/export", "/scratch/copy/export"], ["f00d", None], "weights_fingerprint"),
    (["/shared/runs/x/export", None], ["f00d", "f00d"], "server_limits.root"),
])  # fmt: skip
def test_shards_whose_servers_loaded_other_weights_are_still_refused(tmp_path, capsys, roots, prints, key):
    """Another folder with no fingerprint to say the weights are the same, other weights, or one side saying none:
    refused, naming the key."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    for shard, root, fingerprint in zip(dirs, roots, prints):
        _served(shard, root, fingerprint)
    assert eval_main(["merge", "--data", str(data), "--out", str(tmp_path / "out"), *map(str, dirs)]) == 2
    assert f"/shards/1/run.json: {key} is " in capsys.readouterr().err


def test_one_exports_fingerprints_by_either_formula_merge_and_a_retrained_one_is_refused(tmp_path, capsys):
    """A judge-train export judged by a judge-serve that fingerprinted its files by name, size and modification time
    and, for another shard, by one reading its weights_sha256.json: each fingerprint the export's own now by one
    formula (judge.checkpoints.export_fingerprints), the same weights to `judge-eval run`'s resume and to compare,
    refused by the merge. Merged; the export retrained since the first shard is refused as before."""
    export = tmp_path / "runs" / "judge" / "export"
    old, new = two_formula_export(export)
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]])
    for shard, fingerprint in zip(dirs, (old, new)):
        _served(shard, root_identity(str(export)), fingerprint, judge_ref=str(export))
    rows, _, _ = merge_shards(dirs, data, tmp_path / "out")
    assert rows == 4
    _served(dirs[1], root_identity(str(export)), retrain(export), judge_ref=str(export))
    assert eval_main(["merge", "--data", str(data), "--out", str(tmp_path / "out"), *map(str, dirs)]) == 2
    assert "/shards/1/run.json: weights_fingerprint is " in capsys.readouterr().err


def test_a_merge_removes_the_scores_of_the_predictions_it_replaces_and_a_refused_one_keeps_them(tmp_path):
    """The array's folder scored once, a shard rerun, the shards merged again: the new predictions.jsonl stood beside
    the metrics.json, reports and plots of the old ones until a later score replaced them (never, where it failed;
    a plot of a split no longer scored stayed for good). A merge now removes them, as `judge-eval run --overwrite`
    does; a refused merge writes nothing and removes nothing, and files of other names stay."""
    ids = _sample_ids(4)
    data, dirs = _shards(tmp_path, [ids[:2], ids[2:]], configs=[{}, {"verdict_format": "tagged"}])
    out = tmp_path / "out"
    scores = [out / "metrics.json", out / "report.md", out / "report.html", out / "plots" / "confusion_all.png"]
    for path in scores + [out / "notes.txt"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("of the earlier predictions")
    with pytest.raises(ShardMismatch):
        merge_shards(dirs, data, out)
    assert all(path.is_file() for path in scores)
    (dirs[1] / "run.json").write_text(json.dumps(_record(dirs[1], 2)))  # the shard rerun as the other was judged
    assert merge_shards(dirs, data, out)[0] == 4
    assert [path for path in scores if path.exists()] == [] and (out / "notes.txt").is_file()
