"""``RunConfig``: the settings of ``judge-eval run``, mirrored by the YAML files in ``configs/eval/``.

Its own module (as ``train.config`` and ``serve.config`` are) so that the runner (``eval.judging.run``), its backends
(``eval.judging.backends``) and the local server (``eval.judging.local_server``) all import it from below, with no cycle.

    judge-eval run --config configs/eval/gpt-4o.yaml --concurrency 4 --out runs/gpt-4o
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from judge.plumbing.api_keys import CLIENT_KEY_ENV
from judge.plumbing.config_files import ConfigError
from judge.plumbing.config_files import option as _f
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S
from judge.prompts import PROMPT_TEMPLATES
from judge.verdicts import VerdictFormat

__all__ = ["RunConfig", "ConfigError", "N_FIRST_MISREAD"]

#: How many of a chat run's first answers, all unreadable in the format the run guessed and all readable in the other,
#: stop it (``eval.judging.format_choice.FormatWatch``); here, where ``verdict_format``'s help says it, since
#: format_choice imports the modules that import this one.
N_FIRST_MISREAD = 5

#: The task classifier's settings with their defaults: only ``criteria: auto`` reads them.
_CLASSIFIER_DEFAULTS = {"criteria_classifier": "tfidf", "criteria_classifier_path": "", "criteria_classifier_model": "",
                        "criteria_classifier_api_key_env": "", "criteria_threshold": None}


@dataclass
class RunConfig:
    """Everything ``judge-eval run`` needs; mirrored by the YAML files in ``configs/eval/``.

    Precedence: these defaults, then ``--config FILE``, then command-line flags. Unknown YAML keys are errors.
    """

    judge: str = _f("", "Judge: a checkpoint folder, a hub id (read from the Hugging Face cache), or the base URL of "
                        "judge-serve / vLLM / an OpenAI-compatible API (e.g. http://127.0.0.1:8000/v1). Empty: read "
                        "the URL from base_url_env.")
    data: str = _f("", "POLLUX-format records (JSONL, Parquet, datasets folder or name). Empty: the bundled sample.")
    out: str = _f("", "Output folder for predictions.jsonl and run.json.")
    name: str = _f("", "The judge's label in predictions and reports (default: the served model name).")
    model: str = _f("", "Model name sent in requests (default: the first model the server lists).")
    prompt: str = _f("ru", "ru: the Russian POLLUX judge prompt (POLLUX judges); en: the English task-description "
                           "prompt (API baselines such as GPT-4o, DeepSeek-R1).")
    verdict_format: str = _f("auto", "How the judge writes its verdict: tagged ([FEEDBACK] ... [RESULT] n [END]), "
                                     "integer (reasoning, then a bare integer: ai-forever/Pollux-4B-Judge; thinking "
                                     "stays on) or auto (what a judge-serve names in GET /v1/models, else from the "
                                     "checkpoint's manifest/config or the model id). Against a judge-serve, a format "
                                     "other than the one it serves is refused. A chat run with auto whose first "
                                     f"{N_FIRST_MISREAD} answers all fail in the guessed format and all read in the "
                                     "other (pointwise with --prompt ru, and pairwise) stops with exit 2 naming this "
                                     "flag; under a guessed tagged, an answer that is an integer once the punctuation "
                                     "or markdown after it is dropped (\"2.\", \"**2**\") counts toward that stop, but "
                                     "the integer reader does not take it (a counted no_score under integer too, as "
                                     "POLLUX's own client reads).")
    prompt_version: str = _f("auto", "The Russian pointwise prompt template a chat request asks the judge with. auto: "
                                     "the one a judge-serve names in GET /v1/models, else the checkpoint's export "
                                     "manifest's, else pollux-ru-4b-v1 for an integer-format judge (the released "
                                     "Pollux-4B-Judge's: a URL shows no manifest), else pollux-ru-v2. A version "
                                     "(pollux-ru-v2, pollux-ru-4b-v1) wins over the manifest and the format, e.g. "
                                     "pollux-ru-v2 for an integer judge you trained served by vLLM; against a "
                                     "judge-serve naming another, refused.")
    backend: str = _f("auto", "auto: judge-serve when the URL has /v1/judge, else chat; chat: one chat completion "
                              "per item; judge-serve: /v1/judge with all criteria of an answer per request.")
    base_url_env: str = _f("", "Environment variable holding the base URL when judge is empty (API judges).")
    api_key_env: str = _f(CLIENT_KEY_ENV, "Environment variables holding the API key, the first one set: by "
                                          "default $JUDGE_SERVE_API_KEY (judge-serve's own key), else $OPENAI_API_KEY, "
                                          "else no key; one variable named alone must be set; '' sends no key "
                                          "(judge.plumbing.api_keys.KEY_RULE).")
    api_key: str = _f("", "The API key itself; works, with a warning: a command line is visible to every user of the "
                          "node. Prefer the variable api_key_env names. Never written to run.json.")
    concurrency: int = _f(8, "Requests in flight at once.")
    max_retries: int = _f(5, "Retries of a request that failed for a transient reason (connection, timeout, 408, 409, "
                               "429, 5xx; judge.plumbing.retry).")
    backoff_s: float = _f(1.0, "First retry delay in seconds; doubles per retry (with jitter), capped at 60 s; never "
                                  "shorter than the server's Retry-After (judge.plumbing.retry).")
    timeout_s: float = _f(600.0, "Seconds one request may take.")
    connect_timeout_s: float = _f(120.0, "Seconds the first contact (GET /v1/models) keeps retrying a server that is "
                                         "unreachable or still loading (5xx, Retry-After honoured) before the run "
                                         "stops with exit code 4.")
    retry_wait_budget_s: float = _f(DEFAULT_WAIT_BUDGET_S, "Seconds one request may spend waiting between its "
                                    "retries, all waits together (the backoff and the server's Retry-After, each "
                                    "taken up to 600 s): a retry whose wait would pass it is not made, and the "
                                    "request is a failed row saying so (judge.plumbing.retry). Each attempt has "
                                    "timeout_s besides.")
    max_tokens: int = _f(1024, "Tokens the judge may generate per verdict; a resume keeps the budget its folder's "
                               "verdicts were asked with (run.json's config.max_tokens) and refuses another.")
    temperature: float = _f(0.0, "Sampling temperature, 0 or more (0: greedy).")
    lenient: bool = _f(False, "Accept a verdict with no [END] after its score, cut off or never written "
                              "(judge.parse_verdict lenient=True); the baseline configs set it: Appendix M.1's English "
                              "format line shows none (docs/fidelity.md).")
    cut_rationale: str = _f("fail", "A released -r (regression) judge's rationale cut by max_tokens (finish_reason "
                                    "length), which judge-serve's head still scores: fail records a cut failure (no "
                                    "score; the head's value in its reason); score keeps the head's value, as POLLUX's "
                                    "own pipeline scores whatever the generation wrote (the row's finish_reason stays "
                                    "length; the run's summary counts them in cut_scored). docs/released-pollux.md.")
    pairwise_orders: str = _f("both", "Pairwise rows (answer_1/answer_2): both asks each pair in both orders (position "
                                      "bias shows as raw answers that do not flip with the order, a pair's verdict "
                                      "changing with it); original asks once.")
    batch_size: int = _f(16, "judge-serve backend: most criteria per /v1/judge request.")
    split: str = _f("all", "Which items to judge: all, zero_shot or standard.")
    limit: int = _f(0, "Judge only the first N items of the data (0: all); with criteria auto, the first N items "
                       "its rows expand to (one per chosen criterion), not N rows.")
    extra_body: dict = _f({}, "Extra JSON fields sent with every request: chat ({reasoning_effort: low}) or "
                                "judge-serve's /v1/judge ({constrained: true}).")
    server: str = _f("auto", "Checkpoint judges: auto (judge-serve if installed, else vLLM), judge-serve or vllm.")
    server_args: list = _f([], "Checkpoint judges: extra server flags, e.g. ['--config', "
                               "'configs/serve/tiny-cpu.yaml'] for judge-serve with a tiny judge on CPU.")
    server_env: dict = _f({}, "Checkpoint judges: environment variables for the server, e.g. "
                              "{VLLM_CPU_KVCACHE_SPACE: '1'} (GiB of KV cache) on CPU.")
    server_timeout_s: float = _f(900.0, "Checkpoint judges: seconds the server may take to start.")
    progress: bool = _f(True, "Show a progress bar.")
    overwrite: bool = _f(False, "Discard the predictions already in out (and criteria auto's items, and the scores "
                                "`score` wrote there) instead of resuming; without it, a resume with other settings "
                                "(run_key) is refused.")
    # ---- criteria: auto --------------------------------------------------------------------------------------------
    criteria: str = _f("", "auto: rows without criteria_name are (instruction, answer) pairs, expanded into one item "
                           "per criterion of the task a classifier chooses (judge.criteria_auto); empty: every row "
                           "names its criterion.")
    criteria_classifier: str = _f("tfidf", "criteria auto: the task-classifier method (tfidf, llm or head).")
    criteria_classifier_path: str = _f("", "criteria auto: tfidf/head artefact folder, or the llm method's base URL; "
                                           "empty with tfidf: the classifier shipped with the package.")
    criteria_classifier_model: str = _f("", "criteria auto, llm method: the served model name.")
    criteria_classifier_api_key_env: str = _f(
        "", "criteria auto, llm method: environment variable holding the classifier endpoint's key, sent as "
        "Authorization: Bearer; empty (the default): no key. A variable named alone must be set, several separated "
        "by commas: the first set. Never one of the judge's key variables (api_key_env's, JUDGE_SERVE_API_KEY, "
        "JUDGE_SERVE_REWARD_KEY, VLLM_API_KEY): refused, so that the judge's key is not sent to the classifier's "
        "endpoint; export that key in a variable of its own (e.g. CLASSIFIER_API_KEY).")
    criteria_threshold: float | None = _f(None, "criteria auto: below this task-type probability the criteria fall "
                                               "back to the 13 for a text of unknown task (Critical, General, "
                                               "Subjective: docs/criteria-auto.md); empty: the classifier's own "
                                               "(the shipped tfidf's is chosen on out-of-fold data).")

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad key."""
        choices = {"prompt": ("ru", "en"), "verdict_format": ("auto", *VerdictFormat.ALL), "pairwise_orders": ("both", "original"), "backend": ("auto", "chat", "judge-serve"),
                   "split": ("all", "zero_shot", "standard"), "server": ("auto", "judge-serve", "vllm"),
                   "prompt_version": ("auto", *PROMPT_TEMPLATES), "cut_rationale": ("fail", "score")}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{key}: {getattr(self, key)!r} is not one of {', '.join(allowed)}")
        if self.prompt_version != "auto" and self.prompt == "en":  # a setting that would go unused is refused
            raise ConfigError(f"prompt_version: {self.prompt_version} names a template of the Russian prompt; "
                              "prompt en asks with the English one: drop --prompt-version, or use --prompt ru")
        for key in ("concurrency", "batch_size", "max_tokens"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key}: must be at least 1, got {getattr(self, key)}")
        # Every comparison with NaN is false: a NaN connect_timeout_s passed "<= 0" and then retried for ever, and a
        # NaN temperature went to the server unseen. An infinity is no number of seconds either.
        for key in ("backoff_s", "timeout_s", "connect_timeout_s", "retry_wait_budget_s", "server_timeout_s",
                    "temperature"):
            if not math.isfinite(getattr(self, key)):
                raise ConfigError(f"{key}: must be a finite number, got {getattr(self, key)}")
        # A negative limit would slice items off the end, silently.
        for key in ("limit", "max_retries", "backoff_s", "retry_wait_budget_s", "temperature"):
            if getattr(self, key) < 0:
                raise ConfigError(f"{key}: must be >= 0, got {getattr(self, key)}")
        for key in ("timeout_s", "connect_timeout_s", "server_timeout_s"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{key}: must be positive, got {getattr(self, key)}")
        if not self.out:
            raise ConfigError("out: an output folder is required (--out DIR)")
        if self.criteria_threshold is not None and not 0.0 <= self.criteria_threshold <= 1.0:  # NaN included
            raise ConfigError(f"criteria_threshold: a task-type probability, from 0 to 1; got {self.criteria_threshold}")
        if self.criteria not in ("", "auto"):
            raise ConfigError(f"criteria: {self.criteria!r} is not one of '', auto")
        if self.criteria_classifier not in ("tfidf", "llm", "head"):  # before its path: "path required" misled
            raise ConfigError(f"criteria_classifier: {self.criteria_classifier!r} is not one of tfidf, llm, head")
        unused = [name for name, default in _CLASSIFIER_DEFAULTS.items() if getattr(self, name) != default]
        if self.criteria != "auto" and unused:  # a setting that would go unused is refused, never dropped unseen
            raise ConfigError(f"{unused[0]}: applies only with --criteria auto (the task classifier that chooses the "
                              "criteria of rows without criteria_name); add --criteria auto, or drop it")
        if self.criteria == "auto" and self.criteria_classifier != "tfidf" and not self.criteria_classifier_path:
            raise ConfigError(f"criteria_classifier_path: required with --criteria-classifier "
                              f"{self.criteria_classifier} (artefact folder or llm URL)")
        if self.criteria == "auto" and self.criteria_classifier == "llm" and not self.criteria_classifier_model.strip():
            # Said with the other settings, before the run folder is claimed (judge.criteria_auto refuses it too).
            raise ConfigError("criteria_classifier_model: required with --criteria-classifier llm (the model name "
                              "the endpoint serves)")
        from judge.plumbing.api_keys import check_classifier_key_env

        check_classifier_key_env(self.criteria_classifier_api_key_env, (self.api_key_env,))
        if not self.judge and not self.base_url_env:
            raise ConfigError("judge: give a checkpoint folder or URL (--judge), or base_url_env for an API judge")
