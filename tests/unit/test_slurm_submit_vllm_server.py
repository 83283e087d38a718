"""`judge-train submit` for GRPO in vLLM server mode: the context `trl vllm-serve` is started with. Colocated vLLM
gets ``vllm_max_model_length = max_length`` (train.grpo.grpo_arguments); the server, started by slurm/train.sbatch,
gets the same limit through JUDGE_VLLM_SERVE_MAX_LEN, or it sizes its context and KV cache from the model's config
(40,960 tokens for Qwen3-8B). What train.sbatch does with the variable is tests/unit/test_slurm_scripts.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.plumbing.tensor_parallel import vllm_tensor_parallel_fits
from train import slurm_submit

REPO = Path(__file__).resolve().parents[2]
SERVER_GRPO = REPO / "configs" / "train" / "qwen3-8b" / "grpo.yaml"  # max_length: 6144, vllm_mode: server
COLOCATE_GRPO = REPO / "configs" / "train" / "t-lite" / "grpo.yaml"


@pytest.fixture
def submit_folder(monkeypatch, tmp_path) -> Path:
    """What the shipped configs' relative paths name (tests/support/submit_folder.py); their hub ids in no cache, so
    submit leaves them to the job."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    folder = shipped_configs_submit_folder(tmp_path / "submit")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", *slurm_submit.TRAIN_SCRIPT_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    return folder


def _rendered_block(capsys, config: Path, nodes: int, *after: str) -> list[str]:
    argv = ["--config", str(config), "--nodes", str(nodes), "--gpus-per-node", "8", "--dry-run"]
    assert slurm_submit.main([*argv, *(("--", *after) if after else ())]) == 0
    script = capsys.readouterr().out
    return script.split("# --- rendered by")[1].split("# --- end of rendered values ---")[0].splitlines()


def test_the_server_gets_the_configs_max_length(capsys, submit_folder):
    """configs/train/qwen3-8b/grpo.yaml's max_length 6144 (a 4,096-token prompt + 2,048 completion tokens) is the
    server's --max-model-len, as it is colocated vLLM's vllm_max_model_length."""
    block = _rendered_block(capsys, SERVER_GRPO, 3)
    assert "export JUDGE_VLLM_SERVE_MAX_LEN=6144" in block


def test_the_server_gets_the_max_length_given_after_the_double_dash(capsys, submit_folder):
    """The job runs with `-- --max-length 4096` applied (max_completion_length 2048 still below it): the server is
    started for 4096, not the file's 6144."""
    block = _rendered_block(capsys, SERVER_GRPO, 3, "--max-length", "4096")
    assert "export JUDGE_VLLM_SERVE_MAX_LEN=4096" in block


def test_a_colocated_job_unsets_the_servers_max_length(capsys, submit_folder):
    """No server: the name is unset with the other server variables, so a value in the submitting shell does not
    reach the job."""
    block = _rendered_block(capsys, COLOCATE_GRPO, 1)
    assert not [line for line in block if line.startswith("export JUDGE_VLLM_SERVE")]
    (unset,) = [line for line in block if line.startswith("unset ")]
    assert "JUDGE_VLLM_SERVE_MAX_LEN" in unset.split("#")[0].split()


def test_a_server_tensor_parallel_size_above_the_nodes_gpus_is_refused_before_the_queue(capsys, submit_folder):
    """configs/train/qwen3-8b/grpo.yaml's server splits the model over 8 GPUs of the first node: on nodes of 4 the
    job was rendered, and vLLM stopped at its start after the queue's wait."""
    argv = ["--config", str(SERVER_GRPO), "--nodes", "3", "--gpus-per-node", "4", "--dry-run"]
    assert slurm_submit.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "judge-train submit: vllm_server_tensor_parallel_size 8 is more than the 4 GPUs of the node `trl vllm-serve` "
        "runs on: ask for --gpus-per-node 8 or more, or give -- --vllm-server-tensor-parallel-size 4 or less (one "
        "that divides the model's attention heads)\n")
    assert slurm_submit.main([*argv, "--", "--vllm-server-tensor-parallel-size", "4"]) == 0
    assert "export JUDGE_VLLM_SERVE_TP=4" in capsys.readouterr().out


@pytest.mark.parametrize(("nodes", "training"), [(2, "the other node"), (3, "the other 2 nodes")])
def test_the_server_note_counts_the_training_nodes(capsys, submit_folder, nodes, training):
    """Two nodes: the server on the first, training on one; the note said "training on the other 1"."""
    block = _rendered_block(capsys, SERVER_GRPO, nodes)
    (note,) = [line for line in block if line.startswith("# vLLM server mode")]
    assert note.endswith(f"; training on {training}")


@pytest.mark.parametrize(("heads", "kv_heads", "fits", "refused"), [
    (28, 4, [1, 2, 4], [3, 7, 8]),  # T-lite (Qwen2.5-7B): 7 divides the heads, but neither 4 nor 7 the other
    (32, 8, [1, 2, 4, 8, 16], [3, 6, 12]),  # Qwen3-8B: 16 splits the heads, the 8 key/value heads replicated twice
])  # fmt: skip
def test_the_tensor_parallel_sizes_vllm_shards_a_model_over(heads, kv_heads, fits, refused):
    """vLLM's rule (vllm/config/model.py verify_with_parallel_config; vllm/model_executor/layers/linear.py
    QKVParallelLinear): the heads divide by the size, and the key/value heads by it, or it by them when fewer."""
    assert all(vllm_tensor_parallel_fits(n, heads, kv_heads) for n in fits)
    assert not any(vllm_tensor_parallel_fits(n, heads, kv_heads) for n in refused)


def _model_folder(folder: Path, heads: int, kv_heads: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"num_attention_heads": heads, "num_key_value_heads": kv_heads}))
    for name in ("tokenizer.json", "chat_template.jinja"):  # the names a base folder is checked for
        (folder / name).write_text("{}")
    return folder


def test_a_server_tensor_parallel_size_the_models_heads_do_not_divide_is_refused_before_the_queue(capsys,
                                                                                                submit_folder):
    """A T-lite base (28 attention heads, 4 key/value heads) read from its local folder: the server's 8 GPUs passed
    submit, and vLLM refused the split at the server's start, after the queue's wait."""
    base = _model_folder(submit_folder / "runs" / "t-lite-integer" / "export", 28, 4)
    argv = ["--config", str(SERVER_GRPO), "--nodes", "3", "--gpus-per-node", "8", "--dry-run", "--",
            "--model-name-or-path", str(base)]
    assert slurm_submit.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"judge-train submit: vllm_server_tensor_parallel_size 8: vLLM cannot split {base}'s 28 attention heads (4 "
        f"key/value heads; {base / 'config.json'}) over 8 GPUs, and would refuse it at the server's start; give -- "
        "--vllm-server-tensor-parallel-size 1, 2 or 4 (the sizes up to --gpus-per-node 8 that split them)\n")
    assert slurm_submit.main([*argv, "--vllm-server-tensor-parallel-size", "4"]) == 0
    assert "export JUDGE_VLLM_SERVE_TP=4" in capsys.readouterr().out


def test_the_heads_are_read_from_the_jobs_hub_cache_and_an_unread_config_says_nothing(capsys, submit_folder,
                                                                                      tmp_path):
    """Qwen/Qwen3-8B in the job's cache (32 heads, 8 key/value heads): 8 splits them, 3 does not. Not in the cache
    (nothing is downloaded), or a config.json without the counts: the job's vLLM is left to say."""
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / ("a" * 40)
    _model_folder(snapshot, 32, 8)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("a" * 40)
    argv = ["--config", str(SERVER_GRPO), "--nodes", "3", "--gpus-per-node", "8", "--dry-run"]
    assert slurm_submit.main(argv) == 0
    assert "export JUDGE_VLLM_SERVE_TP=8" in capsys.readouterr().out
    assert slurm_submit.main([*argv, "--", "--vllm-server-tensor-parallel-size", "3"]) == 2
    assert "cannot split Qwen/Qwen3-8B's 32 attention heads (8 key/value heads; " in capsys.readouterr().err
    (snapshot / "config.json").write_text("{}")
    assert slurm_submit.main([*argv, "--", "--vllm-server-tensor-parallel-size", "3"]) == 0
    assert "export JUDGE_VLLM_SERVE_TP=3" in capsys.readouterr().out
