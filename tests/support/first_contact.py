"""What tests/unit/test_first_contact.py and tests/integration/serving/test_first_contact.py share."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.console_scripts import console_script


#: judge-serve's 401 message (serve.connections.ApiKeyMiddleware), as a stand-in repeats it.
NO_KEY = "missing or wrong API key: send 'Authorization: Bearer <key>'"


def env_without_keys(**keys: str) -> dict[str, str]:
    """The test's environment without any API key variable, plus ``keys``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, **keys}


def start_judge_eval(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([console_script("judge-eval"), *argv], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_outcome(proc: subprocess.Popen, timeout_s: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout_s)
    return proc.returncode, out, err


def console_error_line(stderr: str) -> str:
    """The console's last line (the error a user reads), after checking nothing printed a traceback."""
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


def sample_records_file(path: Path, n: int) -> Path:
    """The first ``n`` records of the bundled sample data, as a JSONL file."""
    import judge

    lines = judge.sample_data_path().read_text(encoding="utf-8").splitlines()[:n]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_argv(url: str, out: Path, data: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--no-progress", "--max-retries", "0",
            "--backoff-s", "0.2", *extra]

