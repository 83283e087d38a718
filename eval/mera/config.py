"""MERA task settings: one dataclass per task, mirrored by the YAML files in ``configs/mera/``.

    judge-eval mera ruhumaneval --config configs/mera/ruhumaneval.yaml --endpoint URL --model NAME --out runs/rhe
    judge-eval mera rutie --config configs/mera/rutie.yaml --endpoint URL --model NAME --out runs/rutie --concurrency 8

Defaults, then the YAML given with ``--config``, then flags (``judge.plumbing.config_files``); unknown keys are errors.
The defaults are MERA's task cards and harness (``eval/mera/humaneval.py``, ``eval/mera/rutie.py`` cite the
lines); each deviation is a named field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from judge.plumbing.api_keys import CLIENT_KEY_ENV
from judge.plumbing.config_files import ConfigError
from judge.plumbing.config_files import option as _f

__all__ = ["MeraConfig", "HumanEvalConfig", "RutieConfig", "TASK_CONFIGS", "ConfigError"]


@dataclass
class MeraConfig:
    """Settings every MERA task shares: the endpoint, the run folder, sampling and the HTTP client."""

    task: ClassVar[str] = ""

    endpoint: str = _f("", "OpenAI-compatible base URL including /v1, e.g. http://127.0.0.1:8000/v1.")
    model: str = _f("", "Served model name sent in every request.")
    data: str = _f("MERA-evaluation/MERA", "MERA's released data by hub id (Hugging Face cache first, offline with "
                   "HF_HUB_OFFLINE=1) or a local copy of it: the task's file whose rows carry answers "
                   "(eval/mera/released.py); or one JSONL file; 'sample' for the bundled rows; ruhumaneval also "
                   "'humaneval-en' (English HumanEval, not comparable with MERA's ruHumanEval).")
    out: str = _f("", "Run folder (required); re-running with the same settings resumes.")
    mode: str = _f("completion", "completion: raw prompt to /v1/completions (MERA's protocol); chat: one "
                                 "conversation.", choices=("completion", "chat"))
    temperature: float = _f(0.0, "Sampling temperature.")
    max_tokens: int = _f(16, "Tokens to generate.")
    seed: int = _f(1234, "Request seed (base seed with sampling: seeds).")
    concurrency: int = _f(4, "Requests in flight at once.")
    api_key: str = _f("", "The API key itself; works, with a warning (a command line is visible to every user of the "
                          "node); prefer the variable api_key_env names. Never written to run.json.")
    api_key_env: str = _f(CLIENT_KEY_ENV, "Environment variables holding the API key, the first one set: by "
                                          "default $JUDGE_SERVE_API_KEY (judge-serve's own key), else $OPENAI_API_KEY, "
                                          "else no key; one variable named alone must be set; '' sends no key "
                                          "(judge.plumbing.api_keys.KEY_RULE).")
    request_timeout: float = _f(600.0, "Seconds per request.")
    max_retries: int = _f(5, "Retries on connection errors, timeouts, 408, 409, 429 and 5xx (1 s, doubling).")
    overwrite: bool = _f(False, "Discard earlier progress in out.")
    log_level: str = _f("info", "Logging level (debug, info, warning, error); HTTP request lines at debug only.")


@dataclass
class HumanEvalConfig(MeraConfig):
    """ruHumanEval / HumanEval: n samples per task, run in the sandbox, pass@k."""

    task: ClassVar[str] = "ruhumaneval"

    temperature: float = _f(0.6, "Sampling temperature (MERA's scripts/run_benchmark.sh: RUHUMANEVAL_GEN_KWARGS "
                                 "temperature=0.6,do_sample=True).")
    max_tokens: int = _f(256, "Tokens to generate (MERA's ruhumaneval.yaml sets no max_gen_toks: lm-eval's default "
                              "of 256 applies).")
    n: int = _f(10, "Samples per task.")
    k: list[int] = _f([1, 5, 10], "pass@k budgets; every k <= n.", nargs="+")
    sampling: str = _f("n", "n: the API's n in one request; seeds: one request per sample with seed+i.",
                       choices=("n", "seeds"))
    limit: int | None = _f(None, "Only the first N tasks.")
    self_check: bool = _f(False, "Execute the canonical solutions instead of querying a model (no endpoint needed).")
    extraction: str = _f("mera", "mera: MERA's harness (cut at stops, strip a whole ```python...``` cover, append to "
                                 "the stub); lenient: take code out of fences anywhere, accept a redefined function "
                                 "(chat).", choices=("mera", "lenient"))
    exec_workers: int = _f(2, "Sandboxed executions at once.")
    exec_timeout: float = _f(3.0, "Seconds per test call; a sample gets this x its number of tests, one deadline "
                                  "fixed when it starts.")
    memory_mb: int = _f(1024, "Address-space limit per sample, MiB: the budget of all it runs (one process, new ones "
                              "are refused by the sandbox's seccomp filter).")
    sandbox: str = _f("auto", "auto: bubblewrap when it works, else rlimits only with a warning; bwrap: require it.",
                      choices=("auto", "bwrap", "none"))


@dataclass
class RutieConfig(MeraConfig):
    """ruTiE: dialogues run concurrently, questions strictly in order, the model's own answers in context."""

    task: ClassVar[str] = "rutie"

    scoring: str = _f("generate", "generate: parse the reply (MERA's rutie_gen); logprobs: compare ' 1' with ' 2' "
                                  "(MERA's rutie, the regular submission).", choices=("generate", "logprobs"))
    max_tokens: int = _f(256, "Generate scoring: tokens per answer (rutie_gen sets no max_gen_toks: lm-eval's "
                              "default of 256 applies).")
    stop: list[str] | None = _f(None, "Generate scoring: stop strings. Default: completion mode stops at the first "
                                      "newline, rutie_gen's (until in custom_generate_task.yaml); chat mode none "
                                      "(a chat model's reply often opens with a line of its own); '[]' for none.")
    max_model_len: int | None = _f(None, "Context window for counting prompts that hit it (default: ask /v1/models).")
    answer_cue: str = _f("Ответ:", "Completion mode: the cue the prompt ends in, added once unless the instruction "
                                   "already ends in it (the card's 'Ответ:'); '' builds the harness's prompt, which "
                                   "adds none (docs/mera.md: the flags that reproduce rutie_gen and rutie).")
    answer_parser: str = _f("mera", "mera: MERA's harness, first standalone digit 0-9, '-1' in later context when "
                                    "none; choice: first standalone 1 or 2, the model's own words in later context "
                                    "when none.", choices=("mera", "choice"))


TASK_CONFIGS: dict[str, type[MeraConfig]] = {"ruhumaneval": HumanEvalConfig, "rutie": RutieConfig}
