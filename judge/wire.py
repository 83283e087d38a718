"""``/v1/judge`` on the wire, both directions: what judge-eval sends, what judge-serve answers.

The contract between ``serve`` and ``eval``, as vLLM's ``entrypoints/openai/protocol.py`` is for its server:

- **Requests** (pydantic, strict: unknown keys are refused): ``JudgeRequest`` of ``JudgeItem`` objects (one answer, its
  criteria: taxonomy names/ids or ``CustomCriterion``), and its pairwise variant ``PairwiseRequest`` of
  ``PairItem`` objects (two answers to one instruction and a comparison scale). judge-serve validates bodies with them
  (``serve.schema.parse_judge_request`` adds the field-naming error paths and the size bounds); judge-eval builds
  its bodies with them (``eval.judging.backends``).
- **Responses** (frozen dataclasses, read strictly with ``from_json``): ``JudgeResponse`` — ``items`` of
  ``JudgeResponseItem``, each holding one ``JudgeResult`` per (item, criterion) or per pair — and its
  ``JudgeResponseUsage``. ``serve.judging`` builds them and sends ``to_json()``; ``eval.judging.backends`` reads them back.

``checked_json_fields`` is the one strict reading of a dataclass from a JSON object (unknown keys, missing required
fields and, for the response types, values of the wrong type are errors naming the field); ``JudgeResult.from_json`` and ``eval.judging.predictions.PredictionRow``'s
``from_json`` both read through it. It and ``ScoreSource`` live in ``judge.wire_fields``, which imports no pydantic,
and are re-exported here: a reader of predictions (``judge-eval score``) takes them from there.

A request the types refuse is told one way, whoever refuses it: ``param_of`` names the field of a pydantic error (the
union branch names pydantic puts in its location dropped), ``error_rank`` chooses the error reported among those of
one validation, ``error_words`` says it. judge-serve's 400 (``serve.schema.parse_judge_request``, which adds its own
rules for the request's unions before these) and the reward clients' refusal of a custom criterion they do not send
(``judge.reward_clients``) both use them, so a client reads the same field and words from either.

Why one module of ~600 lines: it is the whole wire contract, both directions (its two pydantic-free readers aside,
in ``judge.wire_fields``), as vLLM's ``protocol.py`` is; a client author reads one file to learn every field and
bound the server checks and how a refusal names what it refuses, and the request and response types share the one
strict reader.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from judge.plumbing.json_reading import got_words
from judge.scales import MAX_LEVELS
from judge.wire_fields import ScoreSource, checked_json_fields

__all__ = ["ScoreSource", "LmVerdict", "JudgmentUsage", "JudgeResult", "JUDGE_RESULT_FIELDS", "checked_json_fields",
           "CustomCriterion", "JudgeItem", "JudgeRequest", "PairItem", "PairwiseRequest", "JudgeResponseItem",
           "JudgeResponseUsage", "JudgeResponse", "PAIRWISE_CRITERION", "ModelLimits", "MAX_LIST_ENTRIES",
           "HUB_SNAPSHOT", "root_identity", "context_words", "read_context_words", "rubrics_kind_error",
           "criterion_kind_error", "param_of",
           "path_key", "printable", "too_many_fields", "MAX_RANKED_ERRORS", "error_rank", "error_words"]


#: The metadata of a field that counts something (tokens, judgments): an integer of at least 0 on the wire.
_COUNT = {"count": True}


@dataclass(frozen=True)
class LmVerdict:
    """A regression judge's LM parsed as a seq2seq verdict (shown beside the head's score, never used as it)."""

    score: float | None
    parse_ok: bool
    error: str | None = None
    error_reason: str | None = None


@dataclass(frozen=True)
class JudgmentUsage:
    """Tokens of one judgment."""

    prompt_tokens: int = field(default=0, metadata=_COUNT)
    completion_tokens: int = field(default=0, metadata=_COUNT)


@dataclass(frozen=True)
class JudgeResult:
    """One criterion's verdict on one item.

    Attributes:
        criterion: the criterion's name as shown to the judge.
        criterion_id: its taxonomy id (None for a custom criterion).
        scale: the scale's levels.
        feedback: the rationale ("" when none was read).
        score: the score; None unless ``parse_ok``. Regression judges: the head's value clipped into the scale.
        parse_ok: whether a score was read (seq2seq) or computed (regression).
        error, error_reason: a ``judge.VerdictError`` code and its explanation when no score.
        score_source: a ``ScoreSource`` value; None without a score.
        in_scale: seq2seq: False for a number outside the scale (scored, as the paper does); None for regression.
        expected_score, confidence, score_probs, score_mass: seq2seq with score log-probabilities: the score
            token's distribution over the scale (``serve.score_reading.ScoreDistribution``), keys of ``score_probs``
            are the levels as strings; None for a scale with a level of more than one token (``"10"``, ``"-1"``).
        regression_score: the head's raw (unclipped) value.
        rationale_complete: regression: whether a tag (``[RESULT]`` or ``[END]``) closed the rationale (False: none
            did; a cut generation is told by ``finish_reason`` ``length``).
        lm_verdict: regression: the LM's own parsed verdict.
        output: the generated text as it came out.
        finish_reason: the engine's (``stop``, ``length``).
        usage: the judgment's tokens.
    """

    criterion: str
    criterion_id: str | None
    scale: list[int]
    feedback: str = ""
    score: float | None = None
    parse_ok: bool = False
    error: str | None = None
    error_reason: str | None = None
    score_source: str | None = None
    in_scale: bool | None = None
    expected_score: float | None = None
    confidence: float | None = None
    score_probs: dict[str, float] | None = None
    score_mass: float | None = None
    regression_score: float | None = None
    rationale_complete: bool | None = None
    lm_verdict: LmVerdict | None = None
    output: str = ""
    finish_reason: str | None = None
    usage: JudgmentUsage = field(default_factory=JudgmentUsage)

    def __post_init__(self) -> None:
        if self.score_source is not None and self.score_source not in ScoreSource.ALL:
            raise ValueError(f"score_source: {self.score_source!r} is not one of {', '.join(ScoreSource.ALL)}")

    def to_json(self) -> dict[str, Any]:
        """The result as sent: every field, nested ones as objects."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "result") -> JudgeResult:
        """A result as received.

        Raises:
            ValueError: naming ``where`` and the field: a key that is not a field, or a required one missing
                (``checked_json_fields``).
        """
        if isinstance(data, Mapping) and "usage" in data and data["usage"] is None:
            # a null usage is tolerated, as before the values were typed: the default (zero tokens) stands in
            data = {k: v for k, v in data.items() if k != "usage"}
        values = checked_json_fields(cls, data, where, typed=True)
        for name, nested in (("lm_verdict", LmVerdict), ("usage", JudgmentUsage)):
            if isinstance(values.get(name), Mapping):
                values[name] = nested(**checked_json_fields(nested, values[name], f"{where}.{name}", typed=True))
        try:
            return cls(**values)
        except ValueError as err:  # __post_init__'s own checks (score_source) know the field, not where it is
            raise ValueError(f"{where}.{err}") from None


#: The keys of a ``JudgeResult`` on the wire, in order.
JUDGE_RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(JudgeResult))


# ---------------------------------------------------------------------------------------------------------------
# requests
# ---------------------------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: Most entries of any list in a request (``items``, ``pairs``, one item's ``criteria``): the ceiling of judge-serve's
#: ``max_batch_items`` and ``max_judgments_per_request`` (``serve.config.ServeConfig`` refuses either above it), whose
#: own values are counted on the body before anything is validated (``serve.schema.parse_judge_request``); this bound
#: holds for any other reader of the types. pydantic refuses a longer list and stops at a list's first bad entry
#: (``fail_fast``), so a body of 200,000 bad criteria costs a few errors, not 400,000 (one per entry and union branch:
#: seconds and gigabytes to build, then to rank). Needs pydantic 2.8.
MAX_LIST_ENTRIES = 16_384
_LIST_BOUND = Field(max_length=MAX_LIST_ENTRIES, fail_fast=True)


class CustomCriterion(_Strict):
    """A criterion outside the taxonomy: its name as shown to the judge and its rubric.

    ``rubrics`` is rubric text (``"0: ...\\n\\n1: ..."``) or a mapping from level to description.
    """

    name: StrictStr = Field(min_length=1)
    #: A mapping has one entry per level: at most ``judge.scales.MAX_LEVELS``.
    rubrics: StrictStr | Annotated[dict[StrictStr, StrictStr], Field(max_length=MAX_LEVELS)]


def rubrics_kind_error(value: Any) -> str:
    """What a ``CustomCriterion``'s ``rubrics`` of neither kind it may be is told (after its field's name): both
    kinds, since either union branch's own words ("must be a string") hide the other, and the value as ``got_words``
    names it. judge-serve's refusal and the reward client's, for a sample it does not send, share these words."""
    return f"must be a string (rubric text) or an object (each level's text), got {got_words(value)}"


def criterion_kind_error(value: Any) -> str:
    """What a criterion of neither kind it may be (a taxonomy name or id; a ``CustomCriterion`` object) is told
    after its field's name: both kinds, as ``rubrics_kind_error`` says a rubric's, and the value as ``got_words``
    names it. judge-serve's refusal and the reward client's, for a sample it does not send, share these words."""
    return f"must be a criterion's name or id (a string) or a {{name, rubrics}} object, got {got_words(value)}"


# ------------------------------------------------------------------------------ the request types' errors, worded
# judge-serve's 400 for a body (``serve.schema.parse_judge_request``) and the reward clients' refusal of a criterion
# they do not send (``judge.reward_clients``) choose among pydantic's errors and word the one chosen alike: a client
# is told the same field and words whichever refused it.

#: No error input given to ``param_of`` (None is a value a body may hold).
_NO_VALUE = object()


def param_of(loc: tuple[Any, ...], data: Any, missing: bool = False, value: Any = _NO_VALUE) -> str:
    """A pydantic error location as a dotted field path: ``("items", 0, "answer")`` -> ``items[0].answer``.

    The location mixes the body's keys with the union branch names pydantic inserts (``str``, ``CustomCriterion``,
    ``list[union[str,CustomCriterion]]``). Walking ``data`` (the validated input) tells them apart: a part is a key
    when the object at that point has it (or, with ``missing``, when it is the last part: the absent field), an
    index when the object is a list, and a branch name otherwise. Guessing from the name alone would take a client's
    own field called ``str``, ``int`` or ``my-field`` for a branch name and report its parent instead. A client's key
    may also be named like a branch (``{"str": ...}`` in a rubric mapping): with ``value`` (the error's input, the
    object it is about; for a missing field, the object that lacks it), the reading that reaches it is taken, keys
    preferred where several do.
    """
    first = None
    for parts, end in _readings(loc, 0, data, missing):  # lazily: the first reading is nearly always the one
        if value is _NO_VALUE or end is value or (type(end) is type(value) and end == value):
            return _joined(parts)
        first = parts if first is None else first
    return _joined(first)


def _readings(loc: tuple[Any, ...], n: int, node: Any, missing: bool) -> typing.Iterator[tuple[list[str], Any]]:
    """Each reading of ``loc[n:]`` from ``node``: the path's parts, and the value it reaches (for a missing field,
    the object that lacks it); a key the object has is read as a key first, then as a branch name."""
    if n == len(loc):
        yield [], node
        return
    part = loc[n]
    if isinstance(part, int) and isinstance(node, list):
        for rest, end in _readings(loc, n + 1, node[part] if part < len(node) else None, missing):
            yield [f"[{part}]", *rest], end
        return
    last_missing = missing and n == len(loc) - 1
    if isinstance(node, Mapping) and (part in node or last_missing):
        if last_missing:
            yield [path_key(str(part))], node
            return
        for rest, end in _readings(loc, n + 1, node[part], missing):
            yield [path_key(str(part)), *rest], end
    yield from _readings(loc, n + 1, node, missing)  # a union branch name: the value stays where it is


def _joined(parts: list[str]) -> str:
    return "".join(part if part.startswith("[") or not i else "." + part for i, part in enumerate(parts)) or "body"


_PLAIN_KEY = re.compile(r"[^\s.\[\]\"\\]+")


def path_key(key: str) -> str:
    """A key as a path segment: as is, or JSON-quoted when it is empty or holds a path character (``a.b`` ->
    ``"a.b"``), made ``printable``."""
    return printable(key if _PLAIN_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False))


def printable(text: str) -> str:
    """``text`` with its lone surrogates (which UTF-8 cannot carry, in a JSON answer or a log) escaped
    (``\\ud800``): safe to put in an error message."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: pydantic errors ranked to choose the one reported. The bounds before validation (judge-serve's value checks, the
#: wire types' list bounds) keep a body's errors few; this keeps the ranking (a ``param_of`` walk each) bounded
#: whatever reaches it. A body broken in one place has a handful (one per union branch).
MAX_RANKED_ERRORS = 64


def error_rank(error: Mapping[str, Any], path: str, meant: bool = True) -> tuple[bool, bool, bool, int]:
    """The key (least first) that chooses, among pydantic's errors of one validation, the one reported; ``path`` is
    the error's field (``param_of``).

    A missing or unknown field comes first: it says what the object is, where a bad value among its fields says one
    of them. A value that fails every branch of a union reports once per branch, so an error inside the branch the
    value was ``meant`` as says more (the caller knows its unions: for a criterion object alone, every error is
    inside it). Likewise an object given where a string or an object is taken (a rubric mapping) is meant as the
    object: an error inside it says more than the string branch's "must be a string, got an object". Then the
    shortest path: the field, before what is inside it.
    """
    string_for_object = error["type"] == "string_type" and isinstance(error.get("input"), Mapping)
    return error["type"] not in ("missing", "extra_forbidden"), not meant, string_for_object, len(path)


#: pydantic's type errors, by their ``type``, as the JSON kind the field must be: its own message names Python's
#: classes ("Input should be a valid dictionary or instance of JudgeItem").
_KIND_ERRORS = {"list_type": "a list", "dict_type": "an object", "model_type": "an object",
                "model_attributes_type": "an object", "string_type": "a string", "int_type": "an integer",
                "int_from_float": "an integer", "float_type": "a number", "bool_type": "true or false"}  # fmt: skip

#: Where a criterion's ``rubrics`` fails both branches of its union (``CustomCriterion``): the end of each branch's
#: error location. A client's key inside a rubric mapping comes after its branch name, never right after ``rubrics``.
_RUBRIC_BRANCHES = {("rubrics", "str"), ("rubrics", "dict[str,str]")}

#: Where an entry of an item's ``criteria`` fails both branches of its union (a name; ``CustomCriterion``): the
#: list's union as pydantic names it, the entry's place, then each branch's name.
_CRITERION_UNION = "list[union[str,CustomCriterion]]"
_CRITERION_BRANCHES = {"str", "CustomCriterion"}
_CRITERION_KIND_ERRORS = {"string_type", "model_type", "model_attributes_type"}


def too_many_fields(count: int, most: int) -> str:
    """What an object of ``count`` fields, over its bound ``most``, is told after its field's name: judge-serve's
    own check before validation (``serve.schema.check_values``), its reward labels' and the wire types' bounds
    (``error_words``) say it in these words."""
    return f"an object of {count} fields; at most {most}"


def error_words(error: Mapping[str, Any]) -> str:
    """What a pydantic error of the request types says, after its field's name (``param_of``): in JSON's words
    ("must be a string, got an integer 5"), never Python's classes; rubrics of neither kind as
    ``rubrics_kind_error`` says them, a criterion of neither kind as ``criterion_kind_error`` does."""
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("string_type", "dict_type") and tuple(error["loc"][-2:]) in _RUBRIC_BRANCHES:
        # either branch's own words ("must be a string") hid the other: a rubric mapping is as good as its text
        return rubrics_kind_error(error["input"])
    loc = tuple(error["loc"])
    if (kind in _CRITERION_KIND_ERRORS and len(loc) >= 3 and loc[-1] in _CRITERION_BRANCHES
            and str(loc[-3]).startswith(_CRITERION_UNION) and not isinstance(error["input"], Mapping)):
        # likewise a criterion: a name (a string) or a custom object; an object's own errors lie inside its branch
        return criterion_kind_error(error["input"])
    if kind in _KIND_ERRORS:
        return f"must be {_KIND_ERRORS[kind]}, got {got_words(error['input'])}"
    if kind == "too_long" and isinstance(error["input"], Mapping):  # a rubric mapping of more levels than a scale
        return too_many_fields(len(error["input"]), error["ctx"]["max_length"])
    ctx = error.get("ctx") or {}
    # a field's bound and the value sent, as a wrong kind is told ("temperature: must be at most 2, got a number 2.5")
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}, got {got_words(error['input'])}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}, got {got_words(error['input'])}"
    if kind == "too_short" and isinstance(error["input"], list) and not error["input"]:
        entries = "entry" if ctx["min_length"] == 1 else "entries"
        return f"must hold at least {ctx['min_length']} {entries}, got an empty list"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "literal_error" and "expected" in ctx:
        # the literal's values as pydantic lists them, each in single quotes ("'refuse' or 'fail'"), as the value
        # sent is quoted after "got" (got_words); JSON's double quotes would come back escaped in the error body
        return f"must be one of {ctx['expected']}, got {got_words(error['input'])}"
    return error["msg"]


class JudgeItem(_Strict):
    """One answer to judge on one or more criteria."""

    id: StrictStr | StrictInt | None = None
    instruction: StrictStr
    answer: StrictStr
    reference_answer: StrictStr | None = None
    #: Taxonomy names/ids and custom criteria; None: the task type's set; "auto": the server's task classifier
    #: chooses the task and with it the criteria (judge.criteria_auto).
    criteria: Annotated[list[StrictStr | CustomCriterion], _LIST_BOUND] | Literal["auto"] | None = None
    task_type: StrictStr | None = None
    task_subtype: StrictStr | None = None
    task_subsubtype: StrictStr | None = None


class JudgeRequest(_Strict):
    """The ``/v1/judge`` body: answers judged on criteria."""

    model: StrictStr | None = None
    items: Annotated[list[JudgeItem], _LIST_BOUND] = Field(min_length=1)
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: StrictFloat | StrictInt | None = Field(default=None, ge=0, le=2)
    lenient: StrictBool | None = None
    constrained: StrictBool | None = None
    #: A judgment whose prompt cannot fit the model's context: ``refuse`` (the default) answers the whole request
    #: 400 naming it; ``fail`` makes it a failed result (``error`` ``context_length_exceeded``) and judges the rest,
    #: as a reward needs (one policy's overlong answer must not cost its batch every reward).
    oversize: Literal["refuse", "fail"] | None = None


#: The ``criterion`` a pairwise result names: the criterion lives inside the comparison scale's text.
PAIRWISE_CRITERION = "pairwise"


class PairItem(_Strict):
    """Two answers to one instruction, compared on a scale (``judge.render_pairwise_prompt``).

    ``rubrics`` is the comparison scale's text, criterion included (POLLUX's demo folds the criterion into it:
    ``demo/serve_pollux_demo.py:77-78``); the verdict is ``-1`` (answer 1 better), ``0`` (tie) or ``1`` (answer 2).
    """

    id: StrictStr | StrictInt | None = None
    instruction: StrictStr
    answer_1: StrictStr
    answer_2: StrictStr
    rubrics: StrictStr


class PairwiseRequest(_Strict):
    """The pairwise ``/v1/judge`` body: ``pairs`` instead of ``items``."""

    model: StrictStr | None = None
    pairs: Annotated[list[PairItem], _LIST_BOUND] = Field(min_length=1)
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: StrictFloat | StrictInt | None = Field(default=None, ge=0, le=2)
    lenient: StrictBool | None = None  # as the pointwise body's: None keeps the server's setting
    #: A pair whose prompt cannot fit the model's context, as the pointwise body's ``oversize``: ``refuse`` (the
    #: default) answers the whole request 400 naming it; ``fail`` makes it a failed result and judges the rest.
    oversize: Literal["refuse", "fail"] | None = None


# ---------------------------------------------------------------------------------------------------------------
# the response envelope
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeResponseItem:
    """One item (or pair) of a response: its index in the request, its id echoed back, and one result per
    criterion (one for a pair); ``task_choice`` for ``"criteria": "auto"`` items (``TaskChoice.to_dict()``)."""

    index: int
    id: str | int | None
    results: list[JudgeResult]
    task_choice: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"index": self.index, "id": self.id, "results": [r.to_json() for r in self.results]}
        if self.task_choice is not None:
            out["task_choice"] = self.task_choice
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "item") -> JudgeResponseItem:
        values = checked_json_fields(cls, data, where, typed=True)
        results = values["results"]
        if not isinstance(results, list):
            raise ValueError(f"{where}.results: expected a list")
        values["results"] = [JudgeResult.from_json(r, where=f"{where}.results[{k}]") for k, r in enumerate(results)]
        return cls(**values)


@dataclass(frozen=True)
class JudgeResponseUsage:
    """Tokens and judgments of one response."""

    judgments: int = field(metadata=_COUNT)
    parsed: int = field(metadata=_COUNT)
    prompt_tokens: int = field(metadata=_COUNT)
    completion_tokens: int = field(metadata=_COUNT)
    total_tokens: int = field(metadata=_COUNT)


@dataclass(frozen=True)
class JudgeResponse:
    """The ``/v1/judge`` response body.

    Attributes:
        id, object, created: a ``judge-<hex>`` id, ``"judge.result"``, Unix seconds.
        model: the served model name.
        judge_kind: ``seq2seq`` or ``regression``.
        verdict_format: ``tagged`` or ``integer`` (``judge.VerdictFormat``).
        prompt_version: the template version the prompts were rendered with.
        items: one per request item (or pair), in request order.
        usage: totals over the response.
    """

    id: str
    object: str
    created: int
    model: str
    judge_kind: str
    verdict_format: str
    prompt_version: str
    items: list[JudgeResponseItem]
    usage: JudgeResponseUsage

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["items"] = [item.to_json() for item in self.items]
        out["usage"] = dataclasses.asdict(self.usage)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "/v1/judge response") -> JudgeResponse:
        """Read a response body strictly (a key that is not a field, or a missing one, is an error naming it)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object")
        values = checked_json_fields(cls, data, where, typed=True)
        items = values["items"]
        if not isinstance(items, list):
            raise ValueError(f"{where}.items: expected a list")
        values["items"] = [JudgeResponseItem.from_json(item, f"{where}.items[{k}]") for k, item in enumerate(items)]
        values["usage"] = JudgeResponseUsage(**checked_json_fields(JudgeResponseUsage, values["usage"], f"{where}.usage",
                                                                   typed=True))
        return cls(**values)


def context_words(prompt_tokens: int, max_tokens: int, window: int, reserve: int = 0) -> str:
    """How judge-serve says a prompt does not fit its model's context, after the words naming the prompt ("the prompt
    is ..."): "is 5000 tokens; with max_tokens 64 it needs 5064 > the model's context of 4096 tokens" (with
    " and 8 reserved" after max_tokens when tokens are reserved). A client reads the numbers back with
    ``read_context_words``: one wording on both sides of the wire, not a pattern copied into the client."""
    reserved = f" and {reserve} reserved" if reserve else ""
    return (f"is {prompt_tokens} tokens; with max_tokens {max_tokens}{reserved} it needs "
            f"{prompt_tokens + max_tokens + reserve} > the model's context of {window} tokens")


_CONTEXT_WORDS = re.compile(r"is (\d+) tokens; with max_tokens \d+(?: and \d+ reserved)? it needs \d+ > the model's "
                            r"context of (\d+) tokens")


def read_context_words(message: str) -> tuple[int, int] | None:
    """(the prompt's tokens, the window) from ``context_words`` in a judge-serve message; None when it holds none."""
    found = _CONTEXT_WORDS.search(message)
    return None if found is None else (int(found.group(1)), int(found.group(2)))


@dataclass(frozen=True)
class ModelLimits:
    """What a server lets one request ask for, read from its ``GET /v1/models`` entry.

    vLLM's entries carry ``max_model_len`` (prompt plus generated tokens); judge-serve adds ``judge_max_tokens`` (the
    most tokens one ``/v1/judge`` verdict may ask for: its ``max_tokens`` setting) and ``max_proxy_tokens`` (the most
    one proxied chat or completion request may ask for in all), and for a judge trained by GRPO
    ``trained_max_completion_length`` (the completion length it learned to reason within:
    ``judge.checkpoints.TrainedLengths``), ``prompt_version``, the pointwise template its ``/v1/judge`` renders
    (``judge.checkpoints.prompt_template_and_why``), and ``verdict_format``, how its judge writes a verdict and so how
    judge-serve parses one (``judge.VerdictFormat``, as judge-serve decided it). judge-serve writes them with
    ``advertised()``; judge-eval reads them with ``from_entry``, fits its ``max_tokens`` to them before the work starts
    and records the prompt version and the verdict format.

    Attributes:
        max_model_len: the context window, None when not advertised.
        judge_max_tokens: ``/v1/judge``'s cap, None when not judge-serve.
        max_proxy_tokens: the proxied generations' cap, None when not judge-serve.
        trained_max_completion_length: None when the checkpoint records none (or the server is not judge-serve).
        prompt_version: None when not judge-serve (or one from before it said).
        verdict_format: None when not judge-serve (or one from before it said); read as the entry writes it, so that a
            client can refuse a format it does not know instead of guessing one.
        root: the checkpoint the engine loaded (vLLM's ``root``), None when not said: under ``--served-model-name``
            the entry's ``id`` is any name, and only ``root`` still names the weights (e.g. Pollux-4B-Judge's).
            judge-serve sends it as ``root_identity`` (a digest, no path); a plain vLLM server as its path. Compare
            two through ``root_identity``.
    """

    max_model_len: int | None = None
    judge_max_tokens: int | None = None
    max_proxy_tokens: int | None = None
    trained_max_completion_length: int | None = None
    prompt_version: str | None = None
    verdict_format: str | None = None
    root: str | None = None

    def advertised(self) -> dict[str, int | str]:
        """judge-serve's fields of a model entry (``max_model_len`` stays the engine's own)."""
        return {name: value for name, value in (("judge_max_tokens", self.judge_max_tokens),
                                                ("max_proxy_tokens", self.max_proxy_tokens),
                                                ("trained_max_completion_length", self.trained_max_completion_length),
                                                ("prompt_version", self.prompt_version),
                                                ("verdict_format", self.verdict_format))
                if value is not None}

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any] | None) -> ModelLimits:
        """The limits a model entry states; a missing field, or one of another type, is None (the server did not
        say)."""
        entry = entry or {}

        def number(name: str) -> int | None:
            value = entry.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

        def text(name: str) -> str | None:
            value = entry.get(name)
            return value if isinstance(value, str) and value else None

        return cls(number("max_model_len"), number("judge_max_tokens"), number("max_proxy_tokens"),
                   number("trained_max_completion_length"), text("prompt_version"), text("verdict_format"),
                   text("root"))


#: A root as judge-serve sends it (``root_identity``): no path, one digest per path.
_ROOT_DIGEST = re.compile(r"sha256:[0-9a-f]{16}")
#: A hub id's checkpoint as the Hugging Face cache lays it out, ``models--<owner>--<name>/snapshots/<revision>``: the
#: part of a root that names the weights (a public repo and revision), whatever ``HF_HOME`` holds it.
HUB_SNAPSHOT = re.compile(r"(?:^|/)(models--[^/]+/snapshots/[^/]+)/*$")


def root_identity(root: str) -> str:
    """The identity of the folder a vLLM engine loaded (its ``root``) that names no local path: a hub snapshot's
    ``models--<owner>--<name>/snapshots/<revision>`` (public, and one revision on any machine), else ``"sha256:"``
    and the first 16 hex digits of the SHA-256 of the path as vLLM names it; a root already in either form as it is.
    judge-serve sends it (a client may not read the engine's path: docs/security.md), and judge-eval compares two
    roots through it, so that a run.json that recorded the path (a plain vLLM server, a judge-serve from before) and
    one that recorded judge-serve's identity of the same path agree; two paths agree exactly when they are equal, or
    name one hub revision."""
    if _ROOT_DIGEST.fullmatch(root):
        return root
    if found := HUB_SNAPSHOT.search(root):
        return found.group(1)
    return "sha256:" + hashlib.sha256(root.encode("utf-8", "surrogatepass")).hexdigest()[:16]
