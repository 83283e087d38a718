"""docs/quickstart.md, typed as printed: train the tiny judge, serve it, ``judge-eval run``, ``judge-eval score``.

The commands are read from the page's ```bash blocks, so the page cannot drift from what works.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import judge
from judge.plumbing.processes import free_port, start_process
from tests.fixtures_models import FAST_ENGINE_ENV, TEST_KV_CACHE
from tests.fixtures_train import REPO_ROOT, TINY_SEQ2SEQ

QUICKSTART = REPO_ROOT / "docs" / "quickstart.md"
CONSOLE_SCRIPTS = ("judge-train", "judge-serve", "judge-eval")


def quickstart_commands() -> list[list[str]]:
    """The toolkit's commands of the page's ```bash blocks, in order, as argv lists (a trailing ``&`` and comments
    dropped)."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", QUICKSTART.read_text(encoding="utf-8"), flags=re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[-1] == "&":
                words = words[:-1]
            if words and words[0] in CONSOLE_SCRIPTS:
                commands.append(words)
    return commands


def _script(name: str) -> str:
    """The console script of the test's environment (``.venv/bin/judge-eval``), as a user's PATH would find it."""
    return str(Path(sys.executable).parent / name)


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_quickstart_commands_as_printed_end_in_a_scored_judge(trained_seq2seq_dir, starts_engine, tmp_path):
    """The page's train -> serve -> run -> score reaches a scored tiny judge: a non-empty MAE table.

    Costs one judge-serve start (~30 s) plus the run and score. Choices, to stay inside the suite's budget:
    - train: the session's seq2seq judge (``seq2seq_run``) is trained from the same config file the page names,
      so the page's train command is not run again; its arguments are parsed by judge-train's own parser into that
      config, and its data pre-flight (the check judge-train runs before building anything) passes.
    - serve: no session judge-serve serves that export with ``configs/serve/tiny-cpu.yaml``, so the page's serve
      command is started as printed, with three changes: ``--model`` is the session's export, ``--port`` a free
      port (the run command's URL follows it), and the tests' KV cache size (256 MiB instead of the config's 1 GiB,
      which a full test run's engines could not all commit at once).
    - run and score: as printed (URL port aside), in a scratch folder, so their relative ``runs/`` land there.
    """
    from train.cli import build_run_parser, check_training_data
    from train.config import config_from_args

    commands = quickstart_commands()
    assert [c[:2] for c in commands] == [["judge-train", "--config"], ["judge-serve", "--config"],
                                         ["judge-eval", "run"], ["judge-eval", "score"]]
    train, serve, run, score = commands

    # ---- train: the same config as the session's judge, parsed as judge-train parses it
    config = config_from_args(build_run_parser().parse_args(train[1:]))
    assert (REPO_ROOT / _option(train, "--config")).resolve() == TINY_SEQ2SEQ.resolve()
    assert config.recipe == "seq2seq" and config.data == "sample"
    check_training_data(config)
    assert _option(serve, "--model") == f"{config.output_dir}/export"  # the page's commands chain

    # ---- serve, as printed but for the model, the port and the KV cache
    port = free_port()
    serve_argv = [_script("judge-serve"), *serve[1:]]
    serve_argv[serve_argv.index("--model") + 1] = str(trained_seq2seq_dir)
    serve_argv += ["--port", str(port), "--log-dir", str(tmp_path / "serve"), "--cpu-kv-cache-gib", "0",
                   "--engine-args", json.dumps(["--kv-cache-memory-bytes", TEST_KV_CACHE])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **FAST_ENGINE_ENV}
    env.pop("JUDGE_SERVE_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    server = start_process(serve_argv, log_path=tmp_path / "judge-serve.log", env=env, cwd=REPO_ROOT,
                           name="judge-serve", grace_s=60.0)
    try:
        started = time.monotonic()
        server.wait_ready(f"http://127.0.0.1:{port}/ready", 420.0)
        print(f"judge-serve ready after {time.monotonic() - started:.0f} s")

        # ---- run and score, as printed, from a scratch folder
        def typed(argv: list[str]) -> subprocess.CompletedProcess:
            argv = [_script(argv[0]), *(a.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for a in argv[1:])]
            return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

        started = time.monotonic()
        ran = typed(run)
        assert ran.returncode == 0, ran.stderr[-3000:]
        print(f"judge-eval run: {time.monotonic() - started:.0f} s")
        started = time.monotonic()
        scored = typed(score)
        assert scored.returncode == 0, scored.stderr[-3000:]
        print(f"judge-eval score: {time.monotonic() - started:.0f} s")
    finally:
        server.stop()

    out = tmp_path / _option(run, "--out")
    first = json.loads((out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["judge"] == Path(trained_seq2seq_dir).parent.name  # served under its run's name, not "export"
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    overall = metrics["splits"]["all"]["overall"]
    assert overall["n"] == len(judge.load_records(judge.sample_data_path()))  # the whole sample, the default data
    assert overall["n_failed"] < overall["n"]
    assert overall["mae"] is not None and 0 <= overall["mae"] <= 10
    # the console table: one line per test with a number after MAE
    assert re.search(r"Standard.*: n \d+, n_failed \d+, .*MAE \d", scored.stdout), scored.stdout
