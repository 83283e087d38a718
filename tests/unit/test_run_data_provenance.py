"""`judge-eval run`'s run.json says which data was judged: the SHA-256 of the data file (``data_sha256``), and for
``--criteria auto``, whose ``config.data`` is the folder's expanded items, the rows given (``source_data`` and
``source_data_sha256``). Without them the record named the data by path only: a file edited or replaced since could
not be told from the one judged, and an auto run's dataset was named nowhere in run.json. `judge-eval merge` keeps each
shard's hash of its own block apart and records the hash of the whole ``--data``. The judge is a scripted chat server
(tests.support.scripted_endpoint)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import judge
from eval.cli import main as eval_main
from eval.judging.shards import merge_shards
from tests.support.eval_cli import run_args, sample_by_split
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

VERDICT = "[FEEDBACK] Ответ верный. [RESULT] 1 [END]"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_json(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))


def test_run_json_holds_the_hash_of_the_data_judged(tmp_path):
    data = judge.write_jsonl(sample_by_split()[:2], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(run_args(server.base_url, data, out, "--verdict-format", "tagged")) == 0
    record = _run_json(out)
    assert record["data_sha256"] == _sha256(data)
    assert "source_data" not in record  # only criteria auto judges other rows than those given


def test_a_criteria_auto_run_names_the_rows_it_expanded(tmp_path):
    rows = [{"id": r.id, "instruction": r.instruction, "answer": r.answer} for r in sample_by_split()[:1]]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(run_args(server.base_url, data, out, "--verdict-format", "tagged", "--criteria", "auto",
                                  "--limit", "2")) == 0
    record = _run_json(out)
    items = out / "auto_items.jsonl"
    assert record["config"]["data"] == str(items.resolve())  # what `score` reads
    assert record["data_sha256"] == _sha256(items)
    assert (record["source_data"], record["source_data_sha256"]) == (str(data.resolve()), _sha256(data))


def test_merged_shards_keep_their_own_hashes_apart_and_record_the_whole_datas(tmp_path):
    records = sample_by_split()[6:10]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    blocks = [judge.write_jsonl(block, tmp_path / f"block{k}.jsonl") for k, block in
              enumerate([records[:2], records[2:]])]
    shards = [tmp_path / "out" / "shards" / str(k) for k in range(2)]
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        for block, shard in zip(blocks, shards):
            assert eval_main(run_args(server.base_url, block, shard, "--verdict-format", "tagged")) == 0
    assert [_run_json(shard)["data_sha256"] for shard in shards] == [_sha256(block) for block in blocks]
    rows, run_json, _ = merge_shards(shards, data, tmp_path / "out")
    assert rows == 4
    assert json.loads(run_json.read_text(encoding="utf-8"))["data_sha256"] == _sha256(data)
