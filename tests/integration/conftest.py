"""The heavy fixtures, seen only by the tests in this folder: the session's judge-serve pair and its engines, the
released -r judge served offline, the tiny judges trained by the real recipes, and a one-host Slurm cluster.

What they are built from (tiny models, the JudgeServer process, the cluster's daemons) is in ``tests/support/``;
``tests/conftest.py`` groups the tests that share each of them on one xdist worker.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.fixtures_models import VLLMServer
from tests.support.fixtures_serve import RELEASED_R_ID, JudgeServeProcess, JudgeServer
from tests.support.fixtures_train import OVERFIT_OVERRIDES, REPO_ROOT, TINY_REGRESSION, TINY_SEQ2SEQ
from tests.support.slurm_cluster import SlurmCluster, cannot_start_reason, start_cluster, stop_cluster


@pytest.fixture(scope="session")
def vllm_tiny_server(seq2seq_server) -> VLLMServer:
    """vLLM's OpenAI server on tiny_causal_dir as "tiny-judge": the generating engine the session's seq2seq
    judge-serve (tests/support/fixtures_serve.py) started on that very folder, under that name.

    One engine for the model instead of two (a full run kept both up, ~45-90 s of start and ~2.5 GiB
    each). It is a plain ``vllm.entrypoints.openai.api_server`` with the flags above, plus judge-serve's own
    (``serve/launch.py`` ``engine_command``: prefix caching, ``enable_thinking`` off in the chat template
    kwargs, which the ChatML template ignores); it asks for the per-launch key judge-serve gives its engines, which
    the test judge-serves set to ``ENGINE_KEY`` (``api_key``: clients read it from ``$OPENAI_API_KEY``, as the
    console scripts do, or take it directly).
    """
    from tests.support.fixtures_serve import ENGINE_KEY

    engine = seq2seq_server.run_record()["engines"]["generator"]
    root_url = engine["url"]
    return VLLMServer(
        base_url=root_url + "/v1",
        root_url=root_url,
        model=seq2seq_server.model,
        log_path=Path(engine["log"]),
        pid=engine["pid"],
        api_key=ENGINE_KEY,
    )


@pytest.fixture(scope="session")
def judge_servers(tmp_path_factory, tiny_causal_dir, tiny_regression_export) -> Iterator[dict[str, JudgeServer]]:
    """Both judge-serve instances, started together (their engines load in parallel), stopped at session end.

    Both have the shipped task classifier (``criteria: auto``), judge-serve's default.
    """
    # no classifier flags: "criteria": "auto" works out of the box with the shipped classifier (judge/data/criteria_tfidf)
    classifier_args = ()
    seq2seq = JudgeServeProcess(tiny_causal_dir, classifier_args, tmp_path_factory.mktemp("serve-seq2seq"))
    processes = [seq2seq]
    try:
        generator_url = seq2seq.wait_run_record()["engines"]["generator"]["url"]
        regression = JudgeServeProcess(
            tiny_regression_export, ("--generator-url", generator_url), tmp_path_factory.mktemp("serve-regression")
        )
        processes.append(regression)
        servers = {"seq2seq": seq2seq.wait_ready(), "regression": regression.wait_ready()}
        yield servers
    finally:
        # The regression server first: it uses the seq2seq server's generating engine.
        for process in reversed(processes):
            process.stop()


@pytest.fixture(scope="session")
def seq2seq_server(judge_servers) -> JudgeServer:
    """judge-serve over the tiny seq2seq judge."""
    return judge_servers["seq2seq"]


@pytest.fixture(scope="session")
def regression_server(judge_servers) -> JudgeServer:
    """judge-serve over the tiny regression judge export."""
    return judge_servers["regression"]


@pytest.fixture(scope="module")
def released_regression_server(tmp_path_factory, released_hub_cache) -> Iterator[JudgeServer]:
    """judge-serve on the hub id of the tiny released -r judge, offline, views built in a scratch cache.

    Module-scoped (its tests live in tests/integration/serving/test_released_judges.py): its two engines stop with the module. They may
    sit beside the session's two (``judge_servers``, started by the first test that needs ``vllm_tiny_server``):
    four tiny engines with ``TEST_KV_CACHE`` each; the OOM killer took an engine on 24 GiB only when six were up at
    once, with 1 GiB of KV cache each.
    """
    views = tmp_path_factory.mktemp("released-views")
    process = JudgeServeProcess(
        Path(RELEASED_R_ID),
        ("--derived-cache-dir", str(views)),
        tmp_path_factory.mktemp("serve-released-r"),
        env={"HF_HUB_CACHE": str(released_hub_cache), "HF_HUB_OFFLINE": "1"},
    )
    try:
        yield process.wait_ready()
    finally:
        process.stop()


@pytest.fixture(scope="session")
def seq2seq_run(tmp_path_factory, overfit_base_dir, overfit_records_path, seq2seq_examples):
    """The seq2seq recipe overfitting the two rows of ``overfit_records_path`` (a RunResult)."""
    from train import seq2seq
    from train.config import load_config

    config = load_config(
        TINY_SEQ2SEQ,
        {
            **OVERFIT_OVERRIDES,
            "output_dir": str(tmp_path_factory.mktemp("seq2seq-run") / "run"),
            "model_name_or_path": str(overfit_base_dir),
            "data": str(overfit_records_path),
            "disable_tqdm": True,
        },
    )
    return seq2seq.main(config, callbacks=(seq2seq_examples,))


@pytest.fixture(scope="session")
def trained_seq2seq_dir(seq2seq_run) -> Path:
    """Export folder of the overfit seq2seq judge (Qwen2ForCausalLM + tokenizer + generation config)."""
    return Path(seq2seq_run.export_dir)


@pytest.fixture(scope="session")
def regression_run(tmp_path_factory, tiny_causal_dir, regression_examples):
    """configs/train/tiny/regression.yaml on ``tiny_causal_dir`` (a RunResult)."""
    from train import regression
    from train.config import load_config

    config = load_config(
        TINY_REGRESSION,
        {
            "output_dir": str(tmp_path_factory.mktemp("regression-run") / "run"),
            "model_name_or_path": str(tiny_causal_dir),
            "disable_tqdm": True,
        },
    )
    return regression.main(config, callbacks=(regression_examples,))


@pytest.fixture(scope="session")
def trained_regression_dir(regression_run) -> Path:
    """Export folder of the tiny regression judge: the classifier here, the generating model in generator/."""
    return Path(regression_run.export_dir)


@pytest.fixture(scope="session")
def train_subprocess_env() -> dict[str, str]:
    """Environment for recipe subprocesses (torchrun, DeepSpeed): cached JIT ops, no W&B, no hub."""
    cache = REPO_ROOT / ".cache" / "torch_extensions"
    cache.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "TORCH_EXTENSIONS_DIR": str(cache),  # an op DeepSpeed would JIT-compile is built once, not per test
        "WANDB_MODE": "disabled",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(REPO_ROOT),
    }


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A real Slurm (munged, slurmctld, slurmd n1 and n2 on 127.0.0.1) for the whole session."""
    reason = cannot_start_reason()
    if reason is not None:
        print(f"\nSlurm tests skipped: {reason}", file=sys.stderr)
        pytest.skip(f"real Slurm cannot start here: {reason}")
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        stop_cluster(cluster, remove=True)


@pytest.fixture(scope="session")
def slurm_job_env(tmp_path_factory) -> dict[str, str]:
    """Environment additions for jobs: the venv's console scripts (torchrun, judge-train) first on PATH, this
    checkout first on PYTHONPATH, no hub, W&B offline, one OpenMP thread per rank (two cores host everything).

    PYTHONPATH: a console script puts its own folder, not the working directory, first on ``sys.path``, so with
    the venv's editable install pointing at another checkout the jobs would import that checkout's code."""
    venv_bin = str(Path(sys.executable).parent)
    repo = str(Path(__file__).resolve().parents[2])
    return {
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": repo + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "offline",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "JUDGE_CACHE_DIR": str(tmp_path_factory.mktemp("slurm-cache")),
    }
