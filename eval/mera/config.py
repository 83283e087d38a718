"""MERA task settings: one dataclass per task, mirrored by the YAML files in ``configs/mera/``.

    judge-eval mera ruhumaneval --config configs/mera/ruhumaneval.yaml --endpoint URL --model NAME --out runs/rhe
    judge-eval mera rutie --config configs/mera/rutie.yaml --endpoint URL --model NAME --out runs/rutie --concurrency 8

Defaults, then the YAML given with ``--config``, then flags (``judge.plumbing.config_files``); unknown keys are errors.
The defaults are MERA's task cards and harness (``eval/mera/humaneval.py``, ``eval/mera/rutie.py`` cite the
lines); each deviation is a named field.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from judge.plumbing.api_keys import CLIENT_KEY_ENV
from judge.plumbing.config_files import ConfigError
from judge.plumbing.config_files import option as _f
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S

__all__ = ["MeraConfig", "HumanEvalConfig", "RutieConfig", "TASK_CONFIGS", "ConfigError", "check_values",
           "parse_stop_list", "THINK_BLOCKS", "think_blocks_refusal"]

#: How ruTiE's ``mera`` parser reads a reply's ``<think>`` reasoning (``RutieConfig.think_blocks``).
THINK_BLOCKS = ("skip", "read")


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
    retry_wait_budget_s: float = _f(DEFAULT_WAIT_BUDGET_S, "Seconds one request may spend waiting between its "
                                    "retries, all waits together (the backoff and the server's Retry-After, each "
                                    "taken up to 600 s): a retry whose wait would pass it is not made, and the run "
                                    "stops there as at retries spent, saying so (judge.plumbing.retry).")
    submission: str | None = _f(None, "Also write the file to upload to MERA's site: a .zip holding the task's "
                                      "ruHumanEval.json or ruTiE.json in the layout of MERA's "
                                      "log_to_submission.py script (an existing zip keeps its other task's file); "
                                      "every test item, failures written as failed (eval/mera/submission.py). ruTiE only from a "
                                      "test split that carries answers: the released one does not (refused).")
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
    top_k: int | None = _f(None, "Sample from the k likeliest tokens, sent as the request's top_k (a vLLM extension "
                                 "of the OpenAI API; default: not sent, the endpoint's own default applies). MERA's "
                                 "harness samples through transformers' generate, which keeps the 50 likeliest where "
                                 "the checkpoint's generation_config.json sets no top_k: --top-k 50 reproduces that "
                                 "for such a checkpoint (docs/mera.md).")
    n: int = _f(10, "Samples per task.")
    k: list[int] = _f([1, 5, 10], "pass@k budgets; every k <= n.", nargs="+")
    sampling: str = _f("n", "n: the API's n in one request; seeds: one request per sample with seed+i.",
                       choices=("n", "seeds"))
    limit: int | None = _f(None, "Only the first N tasks.")
    self_check: bool = _f(False, "Execute the canonical solutions instead of querying a model (no endpoint needed).")
    extraction: str = _f("mera", "mera: MERA's harness (cut at stops, strip a whole ```python...``` cover, append to "
                                 "the stub); lenient: leave <think> reasoning out, take code out of ``` or ~~~ fences "
                                 "anywhere, accept a redefined function (chat).", choices=("mera", "lenient"))
    exec_workers: int = _f(2, "Sandboxed executions at once.")
    exec_timeout: float = _f(3.0, "Seconds per test call; a sample gets this x its number of tests (--deadline "
                                  "per-test) or this + 1 in all (harness), one deadline fixed when it starts.")
    deadline: str = _f("per-test", "per-test: a sample gets --exec-timeout per test call (a deviation: a slow sample "
                                   "with many tests can pass here and time out in MERA's harness), each test "
                                   "running the program afresh; harness: MERA's one --exec-timeout + 1 for the "
                                   "whole sample, the program run once and called per test (ruhumaneval/utils.py "
                                   "check_correctness, unsafe_execute).", choices=("per-test", "harness"))
    memory_mb: int = _f(1024, "Address-space limit per sample, MiB: the budget of all it runs (one process, new ones "
                              "are refused by the sandbox's seccomp filter).")
    sandbox: str = _f("auto", "auto: bubblewrap when it works, else a warning and no isolation but the limits and "
                              "the fork filter (samples read and write what their user can: docs/security.md); bwrap: "
                              "refuse to run without it; none: no isolation, on purpose.",
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
    max_model_len: int | None = _f(None, "Context window: prompts that hit it are counted, and under generate "
                                         "scoring a --max-tokens at or above it is refused before the run "
                                         "(default: ask /v1/models).")
    answer_cue: str = _f("Ответ:", "Completion mode: the cue the prompt ends in, added once unless the instruction "
                                   "already ends in it (the card's 'Ответ:'); '' builds the harness's prompt, which "
                                   "adds none (docs/mera.md: the flags that reproduce rutie_gen and rutie).")
    answer_parser: str = _f("mera", "mera: MERA's harness, first standalone digit 0-9, '-1' in later context when "
                                    "none; choice: first standalone 1 or 2 after any <think> reasoning (one never "
                                    "closed, or a hedge '1 или 2': unparsed), the model's own words in later context "
                                    "when none.", choices=("mera", "choice"))
    context_overflow: str = _f("truncate", "A prompt the endpoint refuses as over its context window: truncate "
                                           "(as MERA's harness, which truncates it from the left) leaves out the "
                                           "oldest whole earlier turns until it fits, counted (n_context_truncated); "
                                           "fail: the question is unparsed ('context limit').",
                               choices=("truncate", "fail"))
    think_blocks: str | None = _f(None, "Generate scoring: how the mera parser reads a reply's <think>...</think> "
                                        "reasoning. skip (chat mode's default, a deviation): the answer is read after "
                                        "it, a block never closed is unparsed ('reasoning not finished'); read "
                                        "(completion mode's default, MERA's harness, whose regex runs on the whole "
                                        "reply): the first digit anywhere, the reasoning's included. The choice parser "
                                        "always skips; log-probability scoring parses no reply.",
                                  choices=THINK_BLOCKS)
    chat_form: str = _f("multiturn", "Chat mode: how the dialogue is laid out. multiturn: the harness's "
                                     "--fewshot_as_multiturn form, earlier answers as assistant turns; single: one "
                                     "user turn holding the harness's completion prompt, as MERA's documented chat "
                                     "commands send it (--apply_chat_template alone).", choices=("multiturn", "single"))


TASK_CONFIGS: dict[str, type[MeraConfig]] = {"ruhumaneval": HumanEvalConfig, "rutie": RutieConfig}

#: Fields that must be above zero (a number of samples, tokens, seconds or MiB), and those that may be zero.
_POSITIVE = ("n", "max_tokens", "request_timeout", "exec_timeout", "memory_mb", "concurrency", "exec_workers")
_NOT_NEGATIVE = ("max_retries", "retry_wait_budget_s", "temperature")
#: ...and those that are either left out (None: every task; ask the endpoint) or at least 1.
_NONE_OR_POSITIVE = ("limit", "max_model_len", "top_k")
#: ...and the largest each of these may be: both become the sandbox's rlimits (RLIMIT_AS in bytes, RLIMIT_CPU from the
#: deadline), which setrlimit takes as a C long (1e300 failed there, after the run's folder was made); a day per test
#: call is past any test a benchmark holds.
_AT_MOST = {"memory_mb": (1 << 43) - 1, "exec_timeout": 86_400.0}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_values(config: MeraConfig) -> None:
    """Refuse a setting out of its range, naming its flag: ``--limit -1`` silently dropped the last task, ``--limit 0``
    ran nothing, a negative ``--exec-timeout`` made every sample's deadline the past.

    Raises:
        ConfigError: the first value out of range (its flag, the rule, the value).
    """
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    for name, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{_flag(name)} must be a finite number, got {value}")
        if name in _POSITIVE and not value > 0:
            raise ConfigError(f"{_flag(name)} must be above 0, got {value}")
        if name in _AT_MOST and value > _AT_MOST[name]:
            raise ConfigError(f"{_flag(name)} must be at most {_AT_MOST[name]:,}, got {value:g}")
        if name in _NOT_NEGATIVE and not value >= 0:
            raise ConfigError(f"{_flag(name)} must be 0 or more, got {value}")
        if name in _NONE_OR_POSITIVE and value is not None and not value >= 1:
            what = "every task" if name == "limit" else "ask the endpoint"
            raise ConfigError(f"{_flag(name)} must be at least 1 (or left out: {what}), got {value}")
    if isinstance(config, RutieConfig):
        refusal = think_blocks_refusal(config.scoring, config.answer_parser, config.think_blocks)
        if refusal is not None:
            raise ConfigError(refusal)


def think_blocks_refusal(scoring: str, answer_parser: str, think_blocks: str | None) -> str | None:
    """Why ``think_blocks`` cannot apply with these settings (``None``: it can, or it is left to the mode's default).

    Refused, not ignored: a setting a run silently did not follow would be recorded in ``run.json`` as if it had.
    Log-probability scoring parses no reply; the ``choice`` parser always reads after the reasoning (its definition,
    ``eval.mera.rutie.parse_answer``), so only ``skip`` describes it.
    """
    if think_blocks is None:
        return None
    if think_blocks not in THINK_BLOCKS:
        return f"--think-blocks must be one of {', '.join(THINK_BLOCKS)}, got {think_blocks!r}"
    if scoring != "generate":
        return (f"--think-blocks {think_blocks} applies to --scoring generate only: --scoring {scoring} parses no "
                "reply; leave --think-blocks out")
    if answer_parser != "mera" and think_blocks == "read":
        return (f"--think-blocks read applies to --answer-parser mera only: --answer-parser {answer_parser} always "
                "reads after the reasoning; leave --think-blocks out, or use --answer-parser mera")
    return None


#: How ``--stop`` is written: JSON, so that a newline is ``\n`` inside a JSON string.
STOP_FORM = """--stop '["\\n"]' (a newline: rutie_gen's stop), --stop '[]' (none)"""


def parse_stop_list(text: str) -> Any:
    """``--stop``'s value: a JSON list of strings only (``null`` for the default), never shell words.

    The shared reading of a list flag (``judge.plumbing.config_files.coerce``) splits text that is not JSON like a
    shell, so ``--stop '\\n'``, ruTiE's newline typed naturally, became a stop on the letter ``n``. Refused
    rather than read with backslash escapes decoded: JSON is the one form the YAML, the help and ``run.json``
    share, and a guessed reading of ``'a b'`` (one stop or two?) would change a run's answers silently.

    Raises:
        ValueError: not a JSON list of strings; the message shows the JSON form.
    """
    import json

    stripped = text.strip()
    if stripped.lower() in ("null", "none"):
        return text  # resolve_config reads it as null: the mode's default
    try:
        value = json.loads(stripped) if stripped.startswith("[") else None
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        shown = f"'{text}'" if text.isprintable() else repr(text)
        raise ValueError(f"--stop takes a JSON list of strings, e.g. {STOP_FORM}; got {shown}")
    return value
