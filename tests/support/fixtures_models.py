"""Session fixtures for tiny real models (registered in tests/conftest.py), and what a real vLLM OpenAI server needs.

Fixtures:
    qwen_tokenizer       the Qwen2.5 fast tokenizer from train.tiny_models.build_qwen_tokenizer (built once)
    qwen3_tokenizer      Qwen3's tokenizer from train.tiny_models.build_qwen3_tokenizer (built once)
    qwen3_tokenizer_dir  Path of a folder holding qwen3_tokenizer alone, saved as the tiny models save theirs
    tiny_causal_dir      Path of a saved tiny Qwen2ForCausalLM judge (seed 0)
    tiny_regression_dir  Path of a saved tiny Qwen2ForSequenceClassification regression judge (seed 0)
    shipped_tfidf        the shipped judge.criteria_auto.TfidfClassifier (loaded once), for tests that only ask it for
                         choices and features (choose, expand_rows fill its lazy caches alone); a test that changes
                         a part of it loads its own
    vllm_tiny_server     (tests/integration/conftest.py) a VLLMServer: vLLM's OpenAI server on tiny_causal_dir, model name "tiny-judge" (the
                         generating engine of the session's seq2seq judge-serve: one engine per model)

Tests that need a second server (a pooling runner for the regression judge, LoRA adapters) start it the same way::

    with start_vllm_server(tiny_regression_dir, extra_args=["--runner", "pooling"]) as server:
        httpx.post(server.root_url + "/classify", json={"model": server.model, "input": ["..."]})
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import pytest

from judge.plumbing.processes import ProcessStartError, free_port, start_process
from tests.support.shared_builds import built_once, pickled_once
from train.tiny_models import build_qwen_tokenizer, build_tiny_qwen2

#: Seconds to wait for /v1/models; ``JUDGE_VLLM_START_TIMEOUT_S`` overrides it. On 2 CPU cores the tiny model
#: answers after 45-90 s when the machine is otherwise idle, and after more than 240 s while two other vLLM
#: servers start beside it (measured: load average 8).
VLLM_START_TIMEOUT_S = 300.0


#: The test engines run the model inside vLLM's EngineCore process (its uniproc executor) instead of spawning a
#: worker process: one Python start fewer, which shortens a tiny engine's start on 2 cores, the same greedy text
#: (docs/performance.md, the row of the model in the engine-core process against vLLM's worker process). vLLM's CPU
#: platform picks the worker process only when multiprocessing is on (vllm/platforms/cpu.py, "OMP requires the MP
#: executor": OpenMP threads are not pinned in-process, a speed matter, not a correctness one). Tests that pin the
#: production process tree (the healing test of tests/integration/serving/test_serve_faults.py, the Slurm jobs)
#: start engines without it.
#: This is for the engines the tests start themselves; judge-serve's own engines get it from its
#: ``cpu_worker_in_engine`` setting (serve/launch.py).
FAST_ENGINE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}

#: The tests' KV cache per engine (vLLM's ``--kv-cache-memory-bytes``). vLLM's CPU build commits it at start: with
#: ``VLLM_CPU_KVCACHE_SPACE=1`` (whole GiB, the least it takes) an engine tree held 3.2 GiB (PSS), and a full test
#: run keeps up to six engines up at once on 24 GiB (the session's servers plus a module's): a CI run ended with
#: "Available memory on node 0 (0.95/23.54 GiB) ... less than requested memory for kv (1.0 GiB)". 256 MiB holds
#: 512k tokens of a tiny judge (512 bytes a token), eight times what 64 concurrent ~1,000-token prompts need.
TEST_KV_CACHE = "256M"


@dataclasses.dataclass(frozen=True)
class VLLMServer:
    """A running vLLM OpenAI-compatible server.

    Attributes:
        base_url: OpenAI client base URL, e.g. ``http://127.0.0.1:PORT/v1``.
        root_url: Server root for vLLM's own routes (``/classify``, ``/tokenize``, ``/health``).
        model: The served model name to put in requests.
        api_key: The Bearer key the server asks for ("" when none).
        log_path: File holding the server's stdout and stderr.
        pid: Process-group id of the server's whole tree (its supervisor's pid, ``judge.plumbing.processes``).
    """

    base_url: str
    root_url: str
    model: str
    log_path: Path
    pid: int
    #: The key the engine asks for (judge-serve gives its engines one; "" for a server started without).
    api_key: str = ""


@contextlib.contextmanager
def start_vllm_server(
    model_dir: str | Path,
    *,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    served_model_name: str = "tiny-judge",
    log_path: str | Path | None = None,
    timeout_s: float | None = None,
) -> Iterator[VLLMServer]:
    """Start vLLM's OpenAI server on a local model folder and stop it on exit.

    Runs ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console command fails in vllm-cpu) with
    ``--enforce-eager --dtype float32 --max-model-len 2048``: eager fp32 starts in about 45 s on CPU, while eager
    bf16 crashes there. ``extra_args`` come last, so a repeated flag overrides the default.

    Args:
        model_dir: Folder written by ``save_pretrained`` (e.g. from ``train.tiny_models.build_tiny_qwen2``).
        extra_args: More server flags, e.g. ``["--runner", "pooling"]`` or LoRA flags.
        env: Variables added to (and overriding) the inherited environment. By default the KV cache gets
            :data:`TEST_KV_CACHE` (a flag; ``VLLM_CPU_KVCACHE_SPACE`` in ``env`` would override it), the compile
            cache lives in a temporary folder, the hub is off, and the model runs in the EngineCore process
            (:data:`FAST_ENGINE_ENV`).
        served_model_name: Name clients put in ``model``.
        log_path: Where the server's output goes; a temporary file when omitted.
        timeout_s: Seconds to wait for ``/v1/models`` to answer; default ``$JUDGE_VLLM_START_TIMEOUT_S`` or
            :data:`VLLM_START_TIMEOUT_S`.

    Returns:
        A context manager yielding a :class:`VLLMServer`. If the server exits or does not answer in time, a
        ``RuntimeError`` carrying the tail of the server log is raised.
    """
    if timeout_s is None:
        timeout_s = float(os.environ.get("JUDGE_VLLM_START_TIMEOUT_S", VLLM_START_TIMEOUT_S))
    scratch = Path(tempfile.mkdtemp(prefix="vllm-server-"))
    log_file_path = Path(log_path) if log_path is not None else scratch / "server.log"
    full_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",  # no hub access, ever: a missing local file must fail, not download
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        **FAST_ENGINE_ENV,
        **(env or {}),
    }
    proc = port = None
    try:
        for attempt in (1, 2):
            port = free_port()
            cmd = [
                sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(model_dir),
                "--served-model-name", served_model_name,
                "--enforce-eager",
                "--dtype", "float32",
                "--max-model-len", "2048",
                "--host", "127.0.0.1",
                "--port", str(port),
                # VLLM_CPU_KVCACHE_SPACE, when set, would override it (vllm/platforms/cpu.py): kept out of the env.
                "--kv-cache-memory-bytes", TEST_KV_CACHE,
                *extra_args,
            ]  # fmt: skip
            # Supervised (judge.plumbing.processes): the server's whole tree (API server, EngineCore) stops with it, or with
            # pytest.
            proc = start_process(cmd, log_path=log_file_path, env=full_env, name="vLLM server", grace_s=30.0)
            try:
                proc.wait_ready(f"http://127.0.0.1:{port}/v1/models", timeout_s, interval_s=1.0)
                break
            except ProcessStartError as err:
                proc.stop()
                diagnosis = f"{err}\n{_machine_state()}"
                # One fresh start after an engine that *exited* while starting: a CI run once lost a pooling engine
                # that way while another engine started beside it, and the root cause was cut from its log. This
                # is the server the tests need, not the behaviour under test; the first failure stays visible as a
                # warning in the run's summary. A timeout, or a second exit, fails the test.
                if err.exit_code is None or attempt == 2:
                    raise RuntimeError(diagnosis) from None
                warnings.warn(f"vLLM server start failed once; starting it again:\n{diagnosis}", stacklevel=1)
        root_url = f"http://127.0.0.1:{port}"
        yield VLLMServer(
            base_url=root_url + "/v1",
            root_url=root_url,
            model=served_model_name,
            log_path=log_file_path,
            pid=proc.pid,
        )
    finally:
        if proc is not None:
            proc.stop()
        # The log stays when it lives in the scratch folder.
        if log_path is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _machine_state() -> str:
    """Available memory and the vLLM processes running now: what a failed start needs to be understood."""
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    available = next(
        (line.split(":", 1)[1].strip() for line in meminfo.splitlines() if line.startswith("MemAvailable")), "?"
    )
    engines = []
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if "vllm" in cmdline.lower():
            engines.append(f"  {proc_dir.name}: {cmdline[:160]}")
    return f"machine: MemAvailable {available}; vLLM processes running: {len(engines)}\n" + "\n".join(engines)


@pytest.fixture(scope="session")
def qwen_tokenizer(tmp_path_factory):
    """The Qwen2.5 fast tokenizer (real vocabulary, ChatML template), built once per test run (~3 CPU-s a build;
    ``tests.support.shared_builds``: the other workers unpickle it). Tests read it; none may change it."""
    return pickled_once(tmp_path_factory, "qwen-tokenizer", (), build_qwen_tokenizer)


@pytest.fixture(scope="session")
def qwen3_tokenizer(tmp_path_factory):
    """Qwen3's tokenizer: the real Qwen2.5 BPE, Qwen3's added tokens and chat template (``train.tiny_models``), built
    once per test run (~3 CPU-s a build; the other workers unpickle it). Tests read it; none may change it."""
    from train.tiny_models import build_qwen3_tokenizer

    return pickled_once(tmp_path_factory, "qwen3-tokenizer-object", (), build_qwen3_tokenizer)


@pytest.fixture(scope="session")
def qwen3_tokenizer_dir(tmp_path_factory, request) -> Path:
    """A folder holding ``qwen3_tokenizer`` alone, written as the tiny models and judge-train's exports write a
    tokenizer (``train.tokenizer_file.save_tokenizer``), once per test run for all workers. A recipe may take it as
    its base model (the recipes write nothing into their base); a test that adds files to a base copies it first
    (:func:`copy_of`)."""
    from train.tokenizer_file import save_tokenizer

    return built_once(tmp_path_factory, "qwen3-tokenizer0", (),
                      lambda folder: save_tokenizer(request.getfixturevalue("qwen3_tokenizer"), folder))


def copy_of(folder: Path, into: Path) -> Path:
    """``folder``'s files copied into ``into`` (made if missing, its other files kept); returns ``into``."""
    shutil.copytree(folder, into, dirs_exist_ok=True)
    return into


@pytest.fixture(scope="session")
def tiny_causal_dir(tmp_path_factory, request) -> Path:
    """Folder of a saved tiny Qwen2ForCausalLM (seed 0) with tokenizer and generation config, built once per test
    run for all workers (its name, ``tiny-causal0``, is the model name judge-serve gives it)."""
    return built_once(tmp_path_factory, "tiny-causal0", ("causal", 0), lambda folder: build_tiny_qwen2(
        folder, kind="causal", seed=0, tokenizer=request.getfixturevalue("qwen_tokenizer")))


@pytest.fixture(scope="session")
def tiny_regression_dir(tmp_path_factory, request) -> Path:
    """Folder of a saved tiny Qwen2ForSequenceClassification regression judge (seed 0), built once per test run for
    all workers."""
    return built_once(tmp_path_factory, "tiny-regression0", ("regression", 0), lambda folder: build_tiny_qwen2(
        folder, kind="regression", seed=0, tokenizer=request.getfixturevalue("qwen_tokenizer")))


@pytest.fixture(scope="session")
def shipped_tfidf():
    """The shipped tfidf classifier, loaded once; read only (see the module's Fixtures)."""
    from judge.criteria_auto import TfidfClassifier

    return TfidfClassifier.load()
