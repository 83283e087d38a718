"""`judge-eval run`'s run.json says which data was judged: the SHA-256 of the data file (``data_sha256``), and for
``--criteria auto``, whose ``config.data`` is the folder's expanded items, the rows given (``source_data`` and
``source_data_sha256``). Without them the record named the data by path only: a file edited or replaced since could
not be told from the one judged, and an auto run's dataset was named nowhere in run.json. `judge-eval merge` keeps each
shard's hash of its own block apart and records the hash of the whole ``--data``. The judge is a scripted chat server
(tests.support.scripted_endpoint)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import judge
from eval.cli import main as eval_main
from eval.judging.shards import merge_shards
from tests.support.eval_cli import run_args, sample_by_split
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

#: The bundled sample of this install, read before a test makes another install's the one `sample` names.
SAMPLE = judge.sample_data_path()
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


def _judge_in_two_shards(records: list, tmp_path: Path) -> tuple[list[Path], list[Path]]:
    """``records`` cut in two blocks, each judged into its shard of tmp_path/out: (the blocks, the shards)."""
    blocks = [judge.write_jsonl(block, tmp_path / f"block{k}.jsonl") for k, block in
              enumerate([records[:2], records[2:]])]
    shards = [tmp_path / "out" / "shards" / str(k) for k in range(2)]
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        for block, shard in zip(blocks, shards):
            assert eval_main(run_args(server.base_url, block, shard, "--verdict-format", "tagged")) == 0
    return blocks, shards


def test_merged_shards_keep_their_own_hashes_apart_and_record_the_whole_datas(tmp_path):
    records = sample_by_split()[6:10]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    blocks, shards = _judge_in_two_shards(records, tmp_path)
    assert [_run_json(shard)["data_sha256"] for shard in shards] == [_sha256(block) for block in blocks]
    rows, run_json, _ = merge_shards(shards, data, tmp_path / "out")
    assert rows == 4
    assert json.loads(run_json.read_text(encoding="utf-8"))["data_sha256"] == _sha256(data)


# ------------------------------------------------- the bundled sample, named as `sample`: found again after a move


def _install(root: Path, monkeypatch, edit=None) -> Path:
    """A copy of the bundled sample under ``root`` (an install's site-packages), made the one ``--data sample``
    resolves to; ``edit`` changes its rows first (another release's sample)."""
    path = root / "site-packages" / "judge" / "data" / "sample.jsonl"
    path.parent.mkdir(parents=True)
    records = judge.load_records(SAMPLE)
    judge.write_jsonl([edit(r) for r in records] if edit else records, path)
    for module in (judge, judge.sample_data):
        monkeypatch.setattr(module, "sample_data_path", lambda: path)
    return path


def _judge_the_sample(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A run of three sample items under an install at tmp_path/old-venv, which is then gone: (run folder, the file
    judged)."""
    import shutil

    old = _install(tmp_path / "old-venv", monkeypatch)
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(run_args(server.base_url, Path("sample"), out, "--verdict-format", "tagged",
                                  "--limit", "3")) == 0
    judged = tmp_path / "judged.jsonl"
    shutil.copy(old, judged)
    shutil.rmtree(tmp_path / "old-venv")
    return out, judged


def test_a_run_on_the_sample_names_it_sample_and_hashes_the_file_judged(tmp_path, monkeypatch):
    out, judged = _judge_the_sample(tmp_path, monkeypatch)
    record = _run_json(out)
    assert record["config"]["data"] == "sample"  # no install's path: it moves with a new venv or an upgrade
    assert record["data_sha256"] == _sha256(judged)


def test_a_run_on_the_sample_is_scored_without_data_after_the_package_moved(tmp_path, monkeypatch, capsys):
    """Before: refused, run.json naming the old install's path ("which is not here ...; pass --data")."""
    out, _ = _judge_the_sample(tmp_path, monkeypatch)
    new = _install(tmp_path / "new-venv", monkeypatch)
    assert eval_main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots"]) == 0, capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["data"] == str(new)


def test_a_changed_sample_is_still_told_from_the_one_judged(tmp_path, monkeypatch, capsys):
    """The sample is named, not pinned: its rows are checked against the texts the predictions judged."""
    out, _ = _judge_the_sample(tmp_path, monkeypatch)
    _install(tmp_path / "new-venv", monkeypatch, edit=lambda r: dataclasses.replace(r, answer=r.answer + " (v2)"))
    capsys.readouterr()
    assert eval_main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots"]) == 2
    assert "judged a text that is no longer in --data" in capsys.readouterr().err


def test_shards_merged_on_the_sample_name_it_sample(tmp_path, monkeypatch):
    import shutil

    old = _install(tmp_path / "old-venv", monkeypatch)
    _, shards = _judge_in_two_shards(judge.load_records(old)[:4], tmp_path)
    assert eval_main(["merge", "--data", "sample", "--out", str(tmp_path / "out"), *map(str, shards)]) == 0
    record = _run_json(tmp_path / "out")
    assert (record["config"]["data"], record["data_sha256"]) == ("sample", _sha256(old))
    shutil.rmtree(tmp_path / "old-venv")
    _install(tmp_path / "new-venv", monkeypatch)
    assert eval_main(["score", "--predictions", str(tmp_path / "out"), "--n-boot", "0", "--no-plots"]) == 0


def test_a_page_finds_the_sample_its_run_json_names(tmp_path, monkeypatch):
    """metrics.json's path is where score found the sample; run.json's `sample` is the current install's."""
    from eval.reports.run_files import data_path

    new = _install(tmp_path / "new-venv", monkeypatch)
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"config": {"data": "sample"}}), encoding="utf-8")
    assert data_path(str(tmp_path / "old-venv" / "sample.jsonl"), run) == new
