"""judge-serve's configuration: one dataclass, mirrored by the YAML files in ``configs/serve/``.

Precedence is defaults, then the YAML given with ``--config``, then command-line flags (``serve.cli``, through
``judge.plumbing.config_files``). Every field carries its help text; the CLI builds its flags from them, so a field added
here is a flag and a YAML key at once. Unknown YAML keys are errors.

Why one module of ~500 lines: each setting is its flag, its YAML key and its help at once, with its bounds and checks
beside it; split, a reader would look for one setting in two places.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from judge.plumbing.config_files import ConfigError
from judge.plumbing.config_files import option as _f

__all__ = ["ServeConfig", "ConfigError", "NUMBER_BOUNDS", "CPU_CONFIG", "cpu_start_hint"]


#: /get_reward's default bound on one request, in seconds: OpenRLHF's reward client gives up after 180 s in all
#: (``openrlhf/utils/agent.py``, ``_fetch_rewards_via_http``: ``aiohttp.ClientTimeout(total=180)``, then 5 tries 1 s
#: apart), so an answer must leave judge-serve before that; 10 s are left for the network and the client's own work.
REWARD_DEADLINE_S = 170.0
#: What vLLM 0.32's ``--dtype`` accepts (``ModelDType`` in ``vllm/config/model.py``): anything else would start an
#: engine that exits half a minute later with vLLM's usage text.
VLLM_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
#: The default bound on judgments queued across all requests in progress (``serve.queued``): 32 requests of the
#: default 512 judgments, 64 times what the engines take at once by default (``max_concurrent_engine_requests``); the
#: default ``max_connections`` of reward requests, each a sample of a POLLUX task's usual 20 criteria (10,240), fit.
MAX_QUEUED_JUDGMENTS = 16384


#: The bounds of every numeric setting, checked by ``ServeConfig.validate``: name -> (lowest, whether the lowest
#: itself is allowed, highest or None, whether the highest is). Two are checked on their own: ``criteria_threshold``
#: (a probability, or null) and ``reward_deadline_s`` (positive and finite). Floats must also be finite: a NaN
#: passes every `< 0` (each comparison with it is false), an inf fails math.ceil (vLLM's --shutdown-timeout), and
#: neither is "no timeout". Zero is allowed where the help gives it a meaning (0: vLLM's default, no restarts, no
#: wait, greedy sampling).
NUMBER_BOUNDS: dict[str, tuple[float, bool, float | None, bool]] = {
    "port": (0, False, 65535, True),  # else bind() raises OverflowError, a traceback
    "tensor_parallel_size": (0, False, None, False),
    "max_model_len": (0, False, None, False),
    "gpu_memory_share": (0, False, 1, True),
    "pooling_memory_fraction": (0, False, 1, False),  # the generator gets the rest: some
    "max_num_seqs": (0, True, None, False),
    "cpu_kv_cache_gib": (0, True, None, False),
    "engine_keepalive_s": (0, False, None, False),
    "attached_probe_interval_s": (0, False, None, False),
    "engine_probe_interval_s": (0, False, None, False),
    "engine_hang_probes": (0, True, None, False),
    "engine_start_timeout_s": (0, False, None, False),
    "engine_stop_grace_s": (0, True, None, False),
    "engine_max_restarts": (0, True, None, False),
    "engine_restart_window_s": (0, False, None, False),
    "engine_restart_backoff_s": (0, True, None, False),
    "engine_restart_backoff_max_s": (0, True, None, False),
    "max_tokens": (0, False, None, False),
    "temperature": (0, True, None, False),
    "feedback_max_chars": (0, True, None, False),
    "max_concurrent_engine_requests": (0, False, None, False),
    "reward_engine_wait_s": (0, True, None, False),
    "max_batch_items": (0, False, None, False),
    "max_judgments_per_request": (0, False, None, False),
    "max_queued_judgments": (0, False, None, False),
    "max_connections": (0, False, None, False),
    "header_timeout_s": (0, False, None, False),
    "body_timeout_s": (0, False, None, False),
    "max_proxy_tokens": (0, False, None, False),
    "max_body_bytes": (0, False, None, False),
    "request_timeout_s": (0, False, None, False),
    "shutdown_grace_s": (0, True, None, False),
}


def _engine_url_problem(url: Any) -> str | None:
    """Why an attached engine's URL cannot serve, or None. Named without the URL: it may hold a password."""
    if not isinstance(url, str) or not url:
        return None
    try:
        split = urlsplit(url)
        netloc = split.netloc
    except ValueError:
        return "not a valid URL (give http://host:port)"
    if "@" in netloc:
        # urllib, which polls the engine's /health (judge.plumbing.processes.http_status), reads "user:pw@host" as
        # a host name: the engine never answers, and the start error that names the URL would log the password.
        return ("a URL with a user or password (user:password@host) cannot be used; give the engine's key in "
                "$VLLM_API_KEY and the URL as http://host:port")
    # urllib (the /health wait) fetches no other scheme, and reads "host:port" with none as a scheme of that name:
    # such a URL would be waited on for all of engine_start_timeout_s as an engine that never answers.
    try:
        split.port  # a port that is no number, or past 65535: urllib's InvalidURL, mid-start
    except ValueError:
        return "its port is not a number from 0 to 65535 (give http://host:port)"
    if split.scheme not in ("http", "https") or not split.hostname:
        return "not an http:// or https:// URL naming a host (give http://host:port)"
    return None


def _bearer_token_problem(key: str, in_path: bool = False) -> str | None:
    """Why ``key`` cannot be a bearer token, or None. A token is visible ASCII (RFC 6750, Section 2.1: ``b64token``,
    letters, digits and ``-._~+/=``): HTTP carries header bytes that the ASGI server hands on as they came and
    Starlette reads as Latin-1, so a non-ASCII key is one set of bytes in UTF-8 and another in the client's encoding,
    and which of them a route would accept depends on how it compares. The key itself is never shown (a secret)."""
    for at, char in enumerate(key):
        if not "!" <= char <= "~":
            kind = "a space or control character" if char.isascii() else "not ASCII"
            return (f"character {at + 1} of the key is {kind}: a bearer token is visible ASCII (RFC 6750, Section 2.1: "
                    "letters, digits and -._~+/=); choose one such, e.g. `python -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))'`")
        if in_path and char in "/?#%,":
            # /get_reward/<key> is one path segment, read after percent-decoding: / ? # % end or change it; OpenRLHF
            # splits --reward.remote_url on commas (openrlhf/cli/train_ppo_ray.py), so a comma cuts the URL in two
            return (f"character {at + 1} of the key is one of / ? # % , which a URL path segment cannot carry as "
                    "written (POST /get_reward/<key>; OpenRLHF splits --reward.remote_url on commas); choose "
                    "letters, digits and -._~ (secrets.token_urlsafe)")
    if in_path and key and not key.strip("."):
        # "." and ".." are dot-segments, which clients and proxies resolve away (RFC 3986, Section 5.2.4)
        return ("the key is only dots, a path segment URL clients resolve away (RFC 3986, Section 5.2.4: "
                "/get_reward/.. is /); choose letters, digits and -._~ (secrets.token_urlsafe)")
    if in_path and key.lower().endswith(".py"):
        # OpenRLHF loads a --reward.remote_url that ends in ".py" as a reward-function file (openrlhf/utils/agent.py,
        # endswith(".py")), and the trainer fails at start. Any case: a random key loses nothing by it.
        return ("the key ends in .py, and OpenRLHF loads a --reward.remote_url ending so as a Python file "
                "(openrlhf/utils/agent.py); choose letters, digits and -._~ (secrets.token_urlsafe) not ending in .py")
    return None


@dataclass
class ServeConfig:
    """Everything judge-serve needs to start its engines and answer requests."""

    # --- the checkpoint
    model: str = _f(
        "",
        "Judge checkpoint: a folder or a hub id such as ai-forever/pollux-judge-7b-r, taken from the Hugging Face "
        "cache (HF_HUB_OFFLINE=1 works with a populated cache). Seq2seq causal LM, our regression export, or a "
        "released -r judge (Qwen2WithRegressionHead; its custom code is not run).",
    )
    served_model_name: str = _f("", "Model name clients send and /v1/models lists (default: the run's name for a judge-train "
                                    "export runs/NAME/export, else the folder name); an "
                                    "attached engine serving under another name is listed by its own, and /v1/judge, "
                                    "GET /v1/models/{id} and the proxied generation routes answer to both (sent to the "
                                    "engine under its own).")
    generator_model: str = _f(
        "", "Regression checkpoints only: folder of the generating model, when the export does not say where it is."
    )
    derived_cache_dir: str = _f(
        "",
        "Released -r judges: where the derived vLLM views (causal LM + classifier) are built when the checkpoint's "
        "folder is not writable or is a hub cache snapshot (default: $XDG_CACHE_HOME or ~/.cache, "
        "pollux-judge/released-views). Built once per checkpoint, then reused.",
    )

    # --- the public server
    host: str = _f("127.0.0.1", "Address judge-serve listens on.")
    port: int = _f(8000, "Port judge-serve listens on (the only public port).")
    api_key: str = _f(
        "", "Bearer token required on every route but /health, /ready and /get_reward (whose details it also "
            "unlocks; /metrics included); works, with a warning (a command line is visible to every user "
            "of the node): prefer the variable api_key_env names. Empty and that variable unset: no auth. Visible "
            "ASCII only (a bearer token, RFC 6750)."
    )
    api_key_env: str = _f("JUDGE_SERVE_API_KEY",
                          "Environment variable holding the bearer token (judge.plumbing.api_keys).")

    allowed_hosts: list[str] = _f(
        [],
        "Without api_key: further Host names judge-serve answers, beyond this machine's own names and addresses "
        "and localhost (others get 400), so a web page cannot reach it by DNS rebinding.",
    )

    # --- the vLLM engines
    tensor_parallel_size: int = _f(1, "vLLM --tensor-parallel-size for each engine.")
    max_model_len: int = _f(4096, "vLLM --max-model-len: prompt plus generated tokens, per judgment; an engine "
                                  "that lists another max_model_len (an attached one) is followed.")
    gpu_memory_share: float = _f(
        0.9,
        "Fraction of each GPU's memory judge-serve may use in total (vLLM --gpu-memory-utilization). With a "
        "regression checkpoint it is split between the two engines (see pooling_memory_fraction).",
    )
    pooling_memory_fraction: float = _f(
        0.3, "Regression checkpoints: the pooling engine's part of gpu_memory_share (the generator gets the rest)."
    )
    dtype: str = _f("auto", "vLLM --dtype (auto, half, float16, bfloat16, float, float32; CPU with enforce_eager "
                            "needs float32).")
    enable_prefix_caching: bool = _f(True, "vLLM prefix caching (the criteria of one answer share their prompt).")
    enforce_eager: bool = _f(False, "vLLM --enforce-eager: no CUDA graphs / torch.compile; starts faster.")
    max_num_seqs: int = _f(0, "vLLM --max-num-seqs (sequences batched per step); 0 keeps vLLM's default.")
    cpu_kv_cache_gib: int = _f(
        0, "CPU builds: VLLM_CPU_KVCACHE_SPACE per engine in whole GiB; 0 keeps vLLM's default (finer: engine_args "
        "['--kv-cache-memory-bytes', '64M'])."
    )
    cpu_worker_in_engine: bool = _f(
        False,
        "CPU builds: run the model inside vLLM's engine-core process (VLLM_ENABLE_V1_MULTIPROCESSING=0) instead of "
        "a worker process of its own, which vLLM's CPU platform spawns and which imports vLLM and torch afresh: a "
        "tiny judge's engine is ready ~20 s sooner on 2 cores. vLLM pins OpenMP threads to cores only in that "
        "worker (vllm/platforms/cpu.py), so leave it off for a real model on a many-core host.",
    )
    engine_args: list[str] = _f([], "More vLLM flags, passed to every engine as given (e.g. ['--seed', '0']).")
    generator_url: str = _f(
        "", "Use a vLLM server already running at this URL as the generating engine instead of starting one."
    )
    pooling_url: str = _f("", "Regression checkpoints: an already running vLLM pooling server to use.")
    engine_keepalive_s: float = _f(
        3.0,
        "Seconds judge-serve keeps an idle connection to an engine for reuse. Keep it below the engine's own "
        "keep-alive (vLLM: VLLM_HTTP_TIMEOUT_KEEP_ALIVE, 5 s by default), or a request can go out on a connection "
        "the engine is closing (it is then retried once on a fresh connection).",
    )
    attached_probe_interval_s: float = _f(
        5.0,
        "Seconds between judge-serve's /health probes of an attached engine (generator_url, pooling_url; each probe "
        "waits at most 5 s): two failed probes in a row mark it dead (requests get 503), and the first answer after "
        "that takes it back, under "
        "the name and max_model_len its /v1/models lists then (kept as they were when that list cannot be read "
        "within 5 s).",
    )
    engine_probe_interval_s: float = _f(
        10.0,
        "Seconds between judge-serve's /health probes of an engine it started, once ready (each probe waits at most "
        "5 s, or this interval when shorter).",
    )
    engine_hang_probes: int = _f(
        3,
        "Failed /health probes in a row (engine_probe_interval_s apart) after which an engine judge-serve started, "
        "alive but not answering, counts as dead: its process tree is stopped and it is restarted like an engine "
        "that exited. 0: started engines are not probed (only their exit is watched).",
    )
    engine_start_timeout_s: float = _f(900.0, "Seconds an engine may take to answer /health after starting.")
    engine_stop_grace_s: float = _f(
        30.0, "Seconds an engine's process tree gets between SIGINT (engines start with SIGTERM blocked) and SIGKILL "
        "when it is stopped or has died."
    )

    # --- self-healing: an engine that dies is restarted, within limits
    engine_max_restarts: int = _f(
        3,
        "Restarts of a dead engine allowed within engine_restart_window_s; one more death and judge-serve stops and "
        "exits 1 (so Slurm, systemd or Kubernetes see it). 0: no restarts, the first death is fatal.",
    )
    engine_restart_window_s: float = _f(600.0, "The sliding window, in seconds, in which engine_max_restarts counts.")
    engine_restart_backoff_s: float = _f(
        2.0, "Seconds before the first restart; each further restart within the window waits twice as long."
    )
    engine_restart_backoff_max_s: float = _f(60.0, "Upper bound of the wait before a restart, in seconds.")

    # --- judging
    max_tokens: int = _f(1024, "Default and upper bound of tokens a judge may generate per judgment.")
    temperature: float = _f(0.0, "Default sampling temperature of the judge (0: greedy, reproducible).")
    verdict_format: str = _f(
        "auto",
        "How the judge writes its verdict: tagged ([FEEDBACK] ... [RESULT] n [END]; thinking off), integer (reasoning, "
        "then a bare integer: ai-forever/Pollux-4B-Judge; thinking on, the engine runs --reasoning-parser qwen3) or "
        "auto (the export manifest, then the model's ids: Pollux-4B-Judge is integer; judge.checkpoints).",
    )
    score_logprobs: bool = _f(True, "Seq2seq: compute the expected score and confidence from score-token logprobs.")
    lenient_parsing: bool = _f(False, "Accept a verdict whose [END] was cut off (judge.parse_verdict lenient=True).")
    stop_at_end: bool = _f(
        True, "Tagged judges: stop at the first [END] (POLLUX's verdict wherever that [END] closes the [RESULT] "
              "block); false: no stop string, as POLLUX (constrained decoding still ends at the verdict's [END]).")
    constrained_decoding: bool = _f(
        False,
        "Force the verdict format ([FEEDBACK] ... [RESULT] n [END]) with vLLM structured outputs by default; "
        "requests may override with \"constrained\". For judges that do not yet keep the format reliably.",
    )
    feedback_max_chars: int = _f(
        0,
        "Constrained decoding: most characters the feedback may have; 0 = unbounded (max_tokens bounds it). Under "
        "xgrammar (auto's choice) a bound costs a regex compile that grows with it, and vLLM fails a request whose "
        "compile outlasts VLLM_REGEX_COMPILATION_TIMEOUT_S (5 s unless set); guidance (structured_outputs_backend) "
        "compiles as decoding goes. Measured: docs/performance.md.",
    )
    structured_outputs_backend: str = _f(
        "auto",
        "vLLM's structured-outputs backend for constrained decoding (--structured-outputs-config.backend of the "
        "generating engine judge-serve starts; an attached one keeps its own): auto "
        "(vLLM's choice: xgrammar, guidance where xgrammar cannot take a request), xgrammar, or guidance "
        "(llguidance). With a feedback bound, guidance fills each step's token mask for less CPU (measured: "
        "docs/performance.md); greedy, the verdicts are the same: the regex is.",
        choices=("auto", "xgrammar", "guidance"),
    )
    max_concurrent_engine_requests: int = _f(
        256, "Judgments (/v1/judge, /get_reward) judge-serve keeps in flight to its engines at once (vLLM batches "
             "them); more wait their turn. Proxied OpenAI requests (/v1/chat/completions, /v1/completions, "
             "/v1/responses) are not counted here: they have their own pool of this number plus 64 connections, "
             "beyond which they wait for one; judgments have one of this number (serve.engine_client.EngineHttp)."
    )

    # --- rewards (POST /get_reward, serve.rewards)
    reward_rule: dict[str, Any] = _f(
        {}, "POST /get_reward: judge.rewards.RewardRule fields as JSON, over the served default {\"on_failure\": "
        "\"zero\"} (e.g. {\"gate\": true}); see docs/rewards.md."
    )
    reward_engine_wait_s: float = _f(
        120.0, "POST /get_reward: seconds a request waits for an engine that is restarting (or still starting) "
        "before its 503. OpenRLHF retries a reward request 5 times, 1 s apart, then fails the training step. The "
        "wait counts against reward_deadline_s and must be shorter. 0: answer 503 at once.",
    )
    reward_deadline_s: float = _f(
        REWARD_DEADLINE_S, "POST /get_reward: seconds a request may take in all (its body, the wait for an engine, "
        "the judging) before its 504; the judging is cancelled then, and when the client disconnects. Keep it under "
        "the trainer's own timeout (OpenRLHF's is 180 s), or it gives up and resends while the first copy is still "
        "judged. request_timeout_s, when shorter, bounds it too.",
    )
    reward_key_env: str = _f(
        "JUDGE_SERVE_REWARD_KEY",
        "Environment variable holding the reward key: POST /get_reward/<key> needs no Authorization header "
        "(OpenRLHF's --reward.remote_url); unset: that route refuses every request. Visible ASCII; judge-serve "
        "refuses at start a key with / ? # % or a comma (it travels in the URL path, and OpenRLHF splits "
        "--reward.remote_url on commas), one of only dots (resolved away as . and ..) or one ending in .py in any "
        "case (OpenRLHF loads such a URL as a Python file); secrets.token_urlsafe makes a good one.",
    )

    # --- bounds and timeouts
    criteria_classifier: str = _f(
        "tfidf", "Task classifier for items with \"criteria\": \"auto\" (tfidf, llm or head; judge.criteria_auto). "
        "Empty: such items are refused with 400."
    )
    criteria_classifier_path: str = _f("", "criteria auto: the tfidf/head artefact folder, or the llm method's base URL; "
                                           "empty with tfidf: the classifier shipped with the package.")
    criteria_classifier_model: str = _f("", "criteria auto, llm method: the served model name.")
    criteria_classifier_api_key_env: str = _f(
        "", "criteria auto, llm method: environment variable holding the classifier endpoint's key, sent as "
        "Authorization: Bearer; empty (the default): no key. A variable named alone must be set, several separated "
        "by commas: the first set. Never one of judge-serve's own key variables (api_key_env's, reward_key_env's, "
        "JUDGE_SERVE_API_KEY, JUDGE_SERVE_REWARD_KEY, the engines' VLLM_API_KEY): refused, so that none is sent to "
        "the classifier's endpoint; export the classifier's key in a variable of its own (e.g. CLASSIFIER_API_KEY)."
    )
    criteria_threshold: float | None = _f(
        None, "criteria auto: below this task-type probability the criteria fall back to the 13 for a text of "
        "unknown task (Critical, General, Subjective: docs/criteria-auto.md), not criteria every task shares (no "
        "STEM or Code leaf lists them); empty: the classifier's own (the shipped tfidf's is chosen on out-of-fold data)."
    )
    max_batch_items: int = _f(64, "Most items one /v1/judge request (or samples one /get_reward request) may carry "
                                  "(at most 16,384, judge.wire.MAX_LIST_ENTRIES).")
    max_judgments_per_request: int = _f(512, "Most (item, criterion) judgments one /v1/judge request may ask for (at "
                                             "most 16,384, judge.wire.MAX_LIST_ENTRIES).")
    max_queued_judgments: int = _f(
        MAX_QUEUED_JUDGMENTS,
        "Most judgments (an item's criteria, a pair) queued across all /v1/judge and /get_reward requests in "
        "progress. A /v1/judge request that would pass it gets 503 with Retry-After before any of its work starts; "
        "a /get_reward request waits for room, in arrival order, until a quarter of reward_deadline_s (at least 1 s) is "
        "left, then gets the 503 (OpenRLHF's retries ignore Retry-After); waiting requests get it at once when "
        "judge-serve drains. One alone is always taken; its count is given back when it is answered, fails or its client leaves. An \"auto\" item "
        "counts as the largest task's criteria set until its task is chosen. At least max_judgments_per_request.",
    )
    max_connections: int = _f(
        512,
        "Most client connections (and requests in progress) judge-serve holds at once; beyond it a request gets 503 "
        "at once (uvicorn's limit_concurrency). Keep it well below the descriptor limit (ulimit -n), which "
        "judge-serve raises to its hard limit at start.",
    )
    header_timeout_s: float = _f(
        10.0, "Seconds a client connection may take to send a request's headers before it is closed."
    )
    body_timeout_s: float = _f(
        60.0, "Seconds a client may take to send a request's body once its headers are in (then a 408), and to take "
        "64 KiB of an answer waiting for it: past either the connection is closed, whose slot it held for ever.",
    )
    max_proxy_tokens: int = _f(
        8192,
        "Most tokens one proxied OpenAI generation request may ask for in all (max_tokens x n); more is a 400 naming "
        "the field. A chat or responses request naming no max_tokens gets max_proxy_tokens // n, at most the "
        "generating engine's max_model_len (vLLM refuses more); a completion naming none is sent as it came and "
        "counted at 16 tokens a completion, vLLM's and OpenAI's default there.",
    )
    max_body_bytes: int = _f(8 * 1024 * 1024, "Largest request body accepted on any route, in bytes (413 beyond).")
    request_timeout_s: float = _f(
        600.0,
        "Seconds a /v1/judge or /get_reward request may take end to end, counted from its headers (the time its body "
        "took to arrive and the wait to decode a large one count), before it gets 504. The body's arrival is bounded "
        "by body_timeout_s (408), not by this: a body still arriving at this deadline is read to its end, then "
        "answered 504. On the proxied routes it bounds, from the headers, the wait to decode a large body (and to "
        "encode it again: a 504 past it), then the wait for a connection to the engine and each wait for more of its "
        "answer, not the whole answer: a stream runs as long as the engine keeps sending.",
    )
    shutdown_grace_s: float = _f(60.0, "On SIGTERM/SIGINT: seconds in-flight requests get to finish.")
    log_level: str = _f("info", "judge-serve log level (debug, info, warning, error).")
    access_log: bool = _f(True, "Log every HTTP request (uvicorn's access log).")
    log_dir: str = _f("", "Folder for engine logs and run.json (default: a fresh temporary folder, removed "
                                 "when judge-serve stops).")

    def validate(self) -> ServeConfig:
        """Check values that would otherwise fail late; returns self.

        Raises:
            ConfigError: naming the field.
        """
        if not self.model:
            raise ConfigError("model: a checkpoint folder is required (--model or `model:` in the YAML)")
        from judge.plumbing.console_logging import LEVELS

        if str(self.log_level).lower() not in LEVELS:  # else a traceback once the port was already bound
            raise ConfigError(f"log_level: unknown level {self.log_level!r} ({', '.join(LEVELS)})")
        # Every number here, at the start (NUMBER_BOUNDS): a value vLLM refuses would surface only minutes later.
        for name, (low, low_ok, high, high_ok) in NUMBER_BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{name}: must be a finite number, got {value!r}")
            too_low = value < low or (value == low and not low_ok)
            too_high = high is not None and (value > high or (value == high and not high_ok))
            if high is None and too_low:
                raise ConfigError(f"{name}: must be {'>= 0' if low_ok else 'positive'}, got {value!r}")
            if too_high and high_ok:
                raise ConfigError(f"{name}: must be at most {high:g}, got {value!r}")
            if too_low or too_high:
                raise ConfigError(f"{name}: must be in {'[' if low_ok else '('}{low:g}, {high:g}{']' if high_ok else ')'}"
                                  f", got {value!r}")
        from judge.wire import MAX_LIST_ENTRIES

        for name in ("max_batch_items", "max_judgments_per_request"):  # every list of a request is bounded by this
            if getattr(self, name) > MAX_LIST_ENTRIES:
                raise ConfigError(f"{name}: at most {MAX_LIST_ENTRIES} (judge.wire.MAX_LIST_ENTRIES, the longest list "
                                  f"a request may hold), got {getattr(self, name)!r}")
        if self.max_queued_judgments < self.max_judgments_per_request:
            # one full request would be taken only while nothing else is queued: 503s its client cannot act on
            raise ConfigError(f"max_queued_judgments: {self.max_queued_judgments} is under max_judgments_per_request "
                              f"({self.max_judgments_per_request}), which one request may ask for")
        if not 0 < self.reward_deadline_s < math.inf:  # NaN too
            raise ConfigError(f"reward_deadline_s: must be a positive, finite number of seconds, got "
                              f"{self.reward_deadline_s!r}")
        if self.reward_engine_wait_s >= self.reward_deadline_s:
            raise ConfigError(f"reward_engine_wait_s: {self.reward_engine_wait_s:g} s is not under reward_deadline_s "
                              f"({self.reward_deadline_s:g} s), which the wait for an engine counts against")
        if self.max_tokens >= self.max_model_len:
            raise ConfigError(
                f"max_tokens: {self.max_tokens} leaves no room for the prompt in max_model_len {self.max_model_len}"
            )
        for name, key, in_path in (("api_key", self.api_key, False),
                                   (f"the reward key (${self.reward_key_env})",
                                    os.environ.get(self.reward_key_env, "") if self.reward_key_env else "", True)):
            problem = _bearer_token_problem(key, in_path)
            if problem:
                raise ConfigError(f"{name}: {problem}")
        for name in ("generator_url", "pooling_url"):
            problem = _engine_url_problem(getattr(self, name))
            if problem:
                raise ConfigError(f"{name}: {problem}")
        if not isinstance(self.allowed_hosts, list) or not all(isinstance(h, str) and h for h in self.allowed_hosts):
            raise ConfigError("allowed_hosts: must be a list of host names")
        if not isinstance(self.engine_args, list) or not all(isinstance(a, str) for a in self.engine_args):
            raise ConfigError("engine_args: must be a list of strings")
        if self.dtype not in VLLM_DTYPES:
            raise ConfigError(f"dtype (--dtype): {self.dtype!r} is not one of {', '.join(VLLM_DTYPES)} (vLLM's --dtype)")
        if self.verdict_format not in ("auto", "tagged", "integer"):
            raise ConfigError(f"verdict_format: {self.verdict_format!r} is not one of auto, tagged, integer")
        from judge.rewards import RewardRule, RewardRuleError

        try:
            # /get_reward answers OpenRLHF, which turns every sample's reward into a tensor: a null fails its step.
            RewardRule.from_dict(self.reward_rule or {}, where="reward_rule").require_numeric("reward_rule")
        except RewardRuleError as err:
            raise ConfigError(str(err)) from None
        if self.criteria_threshold is not None and not 0.0 <= self.criteria_threshold <= 1.0:  # NaN included
            raise ConfigError(f"criteria_threshold: a task-type probability, from 0 to 1; got {self.criteria_threshold}")
        if self.criteria_classifier not in ("", "tfidf", "llm", "head"):
            raise ConfigError(f"criteria_classifier: {self.criteria_classifier!r} is not one of tfidf, llm, head")
        from judge.plumbing.api_keys import check_classifier_key_env

        check_classifier_key_env(self.criteria_classifier_api_key_env, (self.api_key_env, self.reward_key_env))
        if self.criteria_classifier in ("llm", "head") and not self.criteria_classifier_path:
            raise ConfigError(f"criteria_classifier_path: required with criteria_classifier {self.criteria_classifier} "
                              "(artefact folder or llm URL)")
        return self

    @property
    def model_name(self) -> str:
        """The served model name: ``served_model_name`` or the checkpoint folder's name."""
        return self.served_model_name or Path(self.model).name or "judge"

    def to_dict(self) -> dict[str, Any]:
        """The resolved configuration, every secret redacted by ``judge.plumbing.provenance.redact``."""
        from judge.plumbing.provenance import redact

        return redact(dataclasses.asdict(self))


#: The settings file of a judge-serve on a CPU machine (vllm-cpu): eager float32, which vllm-cpu runs.
CPU_CONFIG = "configs/serve/tiny-cpu.yaml"
#: The flags that set what ``cpu_start_hint`` asks of ``CPU_CONFIG``, for an install that has no configs/ folder.
CPU_FLAGS = "--enforce-eager true --dtype float32 --cpu-kv-cache-gib 1"


def cpu_start_hint(config: ServeConfig) -> str:
    """What to add to a failed engine start's message (vLLM's "Engine core initialization failed" names no setting):
    a pointer to ``CPU_CONFIG`` when the installed vLLM is the CPU build and ``config`` does not ask for eager float32
    or sizes no KV cache (``cpu_kv_cache_gib``, or ``--kv-cache-memory-bytes`` in ``engine_args``), else "".

    Args:
        config: the settings judge-serve started its engines with; the installed vLLM build is
            ``serve.engine_version.installed_vllm``'s.
    """
    from serve.engine_version import installed_vllm

    dist, _ = installed_vllm() or ("", "")
    eager_float32 = config.enforce_eager and config.dtype in ("float", "float32")
    sized = config.cpu_kv_cache_gib or any(a.startswith("--kv-cache-memory-bytes") for a in config.engine_args)
    if dist != "vllm-cpu" or (eager_float32 and sized):
        return ""
    said = []
    if not eager_float32:
        said.append(f"judge-serve's engines start with eager float32 (enforce_eager: true, dtype: float32; this start "
                    f"had enforce_eager: {str(config.enforce_eager).lower()}, dtype: {config.dtype})")
    if not sized:
        # vLLM's CPU worker then reserves that share, refusing to start with less free (vllm/v1/worker/cpu_worker.py)
        said.append(f"without cpu_kv_cache_gib an engine reserves gpu_memory_share ({config.gpu_memory_share:g}) of "
                    "the host's memory and fails where less is free (that file sets cpu_kv_cache_gib: 1)")
    # configs/ is no package data: an installed judge-serve's user has the flags that set the same, not the file
    return (f"; on a CPU (vllm-cpu installed) {'; '.join(said)}: start it with --config {CPU_CONFIG} (the "
            f"repository's; an install without it: {CPU_FLAGS})")
