"""A shard of an eval array (slurm/eval.sbatch) that `judge-eval run` finishes without asking a server still merges
with the others (`judge-eval merge`, eval/judging/shards.py): a rerun of a finished shard keeps what its server said
in run.json, and a shard whose block `--split` emptied is counted and compared but for what a server tells a run
(an emptied shard of another split, or a merge of emptied shards only, is refused). The judge is a scripted chat server
(tests.support.scripted_endpoint); a rerun that asks nothing gets a port no server listens on."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging.shards import PER_SHARD, ShardMismatch, merge_shards, merged_record
from tests.support.eval_cli import run_args, sample_by_split
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

VERDICT = "[FEEDBACK] Ответ верный. [RESULT] 1 [END]"


def _closed_url() -> tuple[socket.socket, str]:
    """A port held bound but never listening: any request to it is refused (the socket is returned to keep it so)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    return closed, f"http://127.0.0.1:{closed.getsockname()[1]}/v1"


def _run_json(shard: Path) -> dict:
    return json.loads((shard / "run.json").read_text(encoding="utf-8"))


def _shard_data(tmp_path: Path, blocks: list[list]) -> tuple[Path, list[Path], list[Path]]:
    """The whole data file, each shard's block as its own file, and the shard folders (not made yet)."""
    data = judge.write_jsonl([r for block in blocks for r in block], tmp_path / "data.jsonl")
    files = [judge.write_jsonl(block, tmp_path / f"block{k}.jsonl") for k, block in enumerate(blocks)]
    return data, files, [tmp_path / "out" / "shards" / str(k) for k in range(len(blocks))]


def _judged_then_emptied(blocks: list[Path], shards: list[Path], emptied_split: str) -> None:
    """Shard 0 judged by a chat server under ``--split standard``; shard 1 run under ``emptied_split`` against a URL
    where no server listens (its block holds no row of that split: nothing is asked)."""
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(run_args(server.base_url, blocks[0], shards[0], "--verdict-format", "tagged",
                                  "--split", "standard")) == 0
    closed, url = _closed_url()
    with closed:
        assert eval_main(run_args(url, blocks[1], shards[1], "--verdict-format", "tagged", "--split",
                                  emptied_split)) == 0


def test_a_rerun_with_nothing_to_ask_keeps_the_servers_record_and_the_shards_merge(tmp_path):
    """Both shards judged by a chat server; shard 1 rerun (a resubmitted array, a requeued task) against a URL where no
    server listens: nothing is asked, exit 0, and its run.json keeps backend "chat" and the server's limits (the
    4096-token window its model entry gave) instead of "auto" and no limits; the shards merge, 4 rows."""
    records = sample_by_split()[6:10]
    data, blocks, shards = _shard_data(tmp_path, [records[:2], records[2:]])
    with ScriptedEndpoint(vllm_chat(VERDICT), max_model_len=4096) as server:
        for block, shard in zip(blocks, shards):
            assert eval_main(run_args(server.base_url, block, shard, "--verdict-format", "tagged")) == 0
    before = _run_json(shards[1])
    assert before["backend"] == "chat" and before["server_limits"]["max_model_len"] == 4096
    closed, url = _closed_url()
    with closed:
        assert eval_main(run_args(url, blocks[1], shards[1], "--verdict-format", "tagged")) == 0
    after = _run_json(shards[1])
    assert after["backend"] == "chat"
    assert after["server_limits"] == before["server_limits"]
    assert after["config"]["judge"] == url  # the rerun's own launch is what changed
    assert len(after["earlier_launches"]) == 1
    kept = {key: value for key, value in after.items() if key not in PER_SHARD and key != "config"}
    assert kept == {key: value for key, value in before.items() if key not in PER_SHARD and key != "config"}
    rows, run_json, _ = merge_shards(shards, data, tmp_path / "out")
    assert rows == 4
    merged = json.loads(run_json.read_text(encoding="utf-8"))
    assert (merged["backend"], merged["n_items"]) == ("chat", 4)
    assert merged["server_limits"] == before["server_limits"]


def test_a_shard_whose_block_the_split_emptied_is_counted_and_not_held_to_the_servers_say(tmp_path):
    """`--split standard` over two blocks: shard 0 holds two Standard rows (judged), shard 1 two Zero-Shot rows (none
    selected: no server asked, an empty predictions file, n_items 0). The merge takes shard 0's settings, 2 rows,
    n_items 2 + 0, and lists both shards with their counts."""
    records = sample_by_split()
    zero_shot, standard = records[:2], records[6:8]
    assert {judge.split_of(r) for r in zero_shot} == {"zero_shot"} and {judge.split_of(r) for r in standard} == {
        "standard"}
    data, blocks, shards = _shard_data(tmp_path, [standard, zero_shot])
    _judged_then_emptied(blocks, shards, "standard")
    emptied = _run_json(shards[1])
    assert (emptied["n_items"], emptied["backend"]) == (0, "auto")  # what it holds: it asked no server
    assert (shards[1] / "predictions.jsonl").read_bytes() == b""
    rows, run_json, _ = merge_shards(shards, data, tmp_path / "out")
    assert rows == 2
    merged = json.loads(run_json.read_text(encoding="utf-8"))
    assert (merged["backend"], merged["model"], merged["n_items"]) == ("chat", "scripted", 2)
    assert merged["config"]["split"] == "standard"
    assert [(s["folder"], s["n_items"]) for s in merged["shards"]] == [(str(shards[0]), 2), (str(shards[1]), 0)]


def test_a_shard_with_no_items_but_rows_is_still_compared(tmp_path):
    """n_items 0 beside rows is no emptied block (rows of another run in its folder): compared, and refused naming
    the key that differs."""
    records = sample_by_split()[6:8]
    data, blocks, shards = _shard_data(tmp_path, [records[:1], records[1:]])
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        for block, shard in zip(blocks, shards):
            assert eval_main(run_args(server.base_url, block, shard, "--verdict-format", "tagged")) == 0
    odd = _run_json(shards[1])
    odd.update(n_items=0, backend="auto")
    (shards[1] / "run.json").write_text(json.dumps(odd), encoding="utf-8")
    with pytest.raises(ShardMismatch, match=r"backend is \"auto\", but \"chat\""):
        merge_shards(shards, data, tmp_path / "out")


def test_a_shard_emptied_by_another_split_is_refused_naming_the_split(tmp_path):
    """Two blocks of Standard rows: shard 0 judged with --split standard, shard 1 run with --split zero_shot (a shard
    rerun with another config): none of its rows selected, n_items 0, no server asked. Its rows were never judged, so
    the merge is refused naming config.split, not passed as an emptied block."""
    records = sample_by_split()[6:10]
    data, blocks, shards = _shard_data(tmp_path, [records[:2], records[2:]])
    _judged_then_emptied(blocks, shards, "zero_shot")
    assert _run_json(shards[1])["n_items"] == 0 and (shards[1] / "predictions.jsonl").read_bytes() == b""
    with pytest.raises(ShardMismatch, match=rf"^{shards[1] / 'run.json'}: config\.split is \"zero_shot\", but "
                                            rf"\"standard\" in {shards[0] / 'run.json'}: "):
        merge_shards(shards, data, tmp_path / "out")
    assert not (tmp_path / "out" / "predictions.jsonl").exists()


def _judged_and_emptied(tmp_path: Path) -> tuple[tuple[Path, dict], tuple[Path, dict]]:
    """A shard's run.json as a judge-serve's answers fill it, and an emptied shard's as a run that asked no server
    writes it: every key a server tells a run differs, the rest agree."""
    config = {"judge": "http://node1:8000/v1", "data": "block0.jsonl", "out": "shards/0", "name": "pollux-4b",
              "verdict_format": "integer", "max_tokens": 4096, "split": "standard", "limit": 0, "criteria": "",
              "prompt": "ru"}
    judged = {"config": config, "backend": "judge-serve", "model": "pollux-4b", "n_items": 2,
              "server_limits": {"max_model_len": 8192, "verdict_format": "integer"},
              "weights_fingerprint": "sha256:0123456789abcdef", "prompt_version": "pollux-4b-v1",
              "prompt_version_why": "judge-serve renders the prompts; its GET /v1/models says so"}
    emptied = {"config": {**config, "judge": "http://node2:8000/v1", "data": "block1.jsonl", "out": "shards/1",
                          "name": "", "verdict_format": "tagged", "max_tokens": 32},
               "backend": "auto", "model": "", "n_items": 0, "server_limits": {"max_model_len": None},
               "weights_fingerprint": None, "prompt_version": "pollux-ru-v2",
               "prompt_version_why": "a tagged judge without an export manifest: the 7B/32B judges' prompt"}
    return (tmp_path / "0", judged), (tmp_path / "1", emptied)


def test_what_a_server_tells_a_run_is_all_an_emptied_shard_may_differ_in(tmp_path):
    """An emptied shard beside a judged one that differs in every key a server tells a run (backend, model,
    server_limits, weights_fingerprint, prompt_version and why; config name, verdict_format, max_tokens) merges
    with the judged shard's record; the same shard with --limit 5 is refused naming config.limit, and the judged
    shard itself is compared in full."""
    (judged_dir, judged), (emptied_dir, emptied) = _judged_and_emptied(tmp_path)
    records = [(emptied_dir, emptied), (judged_dir, judged)]  # the emptied shard first: the record is still the other's
    merged = merged_record(records, tmp_path / "data.jsonl", tmp_path / "out", {emptied_dir})
    assert {key: merged[key] for key in ("backend", "model", "weights_fingerprint", "prompt_version", "n_items")} == {
        "backend": "judge-serve", "model": "pollux-4b", "weights_fingerprint": "sha256:0123456789abcdef",
        "prompt_version": "pollux-4b-v1", "n_items": 2}
    assert (merged["config"]["verdict_format"], merged["config"]["max_tokens"]) == ("integer", 4096)
    assert [(s["folder"], s["n_items"]) for s in merged["shards"]] == [(str(emptied_dir), 0), (str(judged_dir), 2)]
    limited = (emptied_dir, {**emptied, "config": {**emptied["config"], "limit": 5}})
    with pytest.raises(ShardMismatch, match=r"config\.limit is 5, but 0 in "):
        merged_record([(judged_dir, judged), limited], tmp_path / "data.jsonl", tmp_path / "out", {emptied_dir})
    with pytest.raises(ShardMismatch, match=r"backend is \"auto\", but \"judge-serve\""):
        merged_record([(judged_dir, judged), (emptied_dir, emptied)], tmp_path / "data.jsonl", tmp_path / "out")


def test_a_merge_where_no_shard_had_an_item_to_judge_is_refused(tmp_path, capsys):
    """--split standard over two blocks of Zero-Shot rows: both shards emptied. The merge wrote an empty run and
    score then said "no predictions ... run judge-eval run first", which selects none again. Refused: exit 2, one
    line naming the split, nothing written."""
    records = sample_by_split()[:4]
    assert {judge.split_of(r) for r in records} == {"zero_shot"}
    data, blocks, shards = _shard_data(tmp_path, [records[:2], records[2:]])
    closed, url = _closed_url()
    with closed:
        for block, shard in zip(blocks, shards):
            assert eval_main(run_args(url, block, shard, "--verdict-format", "tagged", "--split", "standard")) == 0
    capsys.readouterr()
    code = eval_main(["merge", "--data", str(data), "--out", str(tmp_path / "out"), *map(str, shards)])
    assert code == 2
    assert capsys.readouterr().err == (
        "judge-eval merge: error: no shard had an item to judge (--split standard kept none of the rows of the 2 "
        "shards' blocks); nothing to merge: judge the data with a --split that selects some of its rows\n")
    assert not (tmp_path / "out" / "predictions.jsonl").exists() and not (tmp_path / "out" / "run.json").exists()
