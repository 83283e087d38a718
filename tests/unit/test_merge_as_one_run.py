"""An eval array merged (`judge-eval merge`, eval/judging/shards.py) scores exactly as one `judge-eval run` of the
same items, a shard killed and resumed among them; and a shard whose resume changed only how the run went (the
settings a resume may change, ``eval.judging.run_settings.RESUME_FREE``: concurrency, timeouts, retries) is the
same judge to the merge, as it is to the resume. The judge is a scripted chat server
(tests.support.scripted_endpoint) whose verdict depends on the request alone, so both runs get the same answers."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import judge
from eval.cli import main as eval_main
from tests.support.eval_cli import cut_predictions_to, run_args, sample_by_split
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


def _respond(path: str, body: dict) -> tuple:
    """vLLM's chat route: a verdict 0-2 chosen by the request's messages, so that scores differ across items but not
    between two runs asking the same item; the backend probe (POST /v1/judge) gets vLLM's 404."""
    if path == "/v1/judge":
        return 404, {"detail": "Not Found"}
    score = zlib.crc32(json.dumps(body["messages"], sort_keys=True).encode("utf-8")) % 3
    return 200, chat_completion(f"[FEEDBACK] ok [RESULT] {score} [END]", body["model"])


def _metrics(out: Path, data: Path) -> dict:
    assert eval_main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data), "--out",
                      str(out), "--n-boot", "20", "--vc-repeats", "2"]) == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics.pop("predictions") == str(out / "predictions.jsonl")  # the one figure that names its folder
    return metrics


def test_a_merged_array_with_a_resumed_shard_scores_as_one_run(tmp_path):
    """12 records in 3 shards laid out as eval.sbatch cuts them; shard 1 killed after one row and resumed with a
    lower concurrency and a longer timeout (a failed task's mend). The merge was refused ("config.concurrency is
    2, but 8": rerun it with --overwrite), though the resume itself took those settings as free. Merged, every
    figure of metrics.json equals the unsharded run's; the merged config keeps no concurrency or timeout (the shards
    differ) and each shard's are listed under ``shards``."""
    records = sample_by_split()
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    array = tmp_path / "array"
    (array / "shards").mkdir(parents=True)
    (array / "shards" / "count").write_text("3\n", encoding="utf-8")
    shards = []
    for k in range(3):
        shard = array / "shards" / str(k)
        shard.mkdir()
        judge.write_jsonl(records[4 * k:4 * k + 4], shard / "data.jsonl")
        shards.append(shard)
    with ScriptedEndpoint(_respond) as server:
        tagged = ("--verdict-format", "tagged")
        assert eval_main(run_args(server.base_url, data, tmp_path / "whole", *tagged)) == 0
        for shard in shards:
            assert eval_main(run_args(server.base_url, shard / "data.jsonl", shard, *tagged)) == 0
        cut_predictions_to(shards[1], 1)  # killed after its first row
        assert eval_main(run_args(server.base_url, shards[1] / "data.jsonl", shards[1], *tagged,
                                  "--concurrency", "2", "--timeout-s", "1200")) == 0
    assert len((shards[1] / "predictions.jsonl").read_text(encoding="utf-8").splitlines()) == 4

    assert eval_main(["merge", "--data", str(data), "--out", str(array), *map(str, shards)]) == 0
    record = json.loads((array / "run.json").read_text(encoding="utf-8"))
    assert "concurrency" not in record["config"] and "timeout_s" not in record["config"]
    assert record["config"]["max_retries"] == 5  # one value for every shard: the run's
    assert [s["config"] for s in record["shards"]] == [{"concurrency": 8, "timeout_s": 600.0},
                                                       {"concurrency": 2, "timeout_s": 1200.0},
                                                       {"concurrency": 8, "timeout_s": 600.0}]
    assert _metrics(array, data) == _metrics(tmp_path / "whole", data)
