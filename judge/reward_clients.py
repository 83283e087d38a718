"""The judge as a reward in trl and verl: client functions over judge-serve's ``/v1/judge``, importable without vLLM,
torch or a GPU (they need ``httpx`` and the contract).

**trl** (``GRPOTrainer(reward_funcs=[...])``)::

    from judge.reward_clients import trl_reward_function
    reward = trl_reward_function("http://judge:8000", criteria=["Креативность", "Грамотность"])
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=..., args=GRPOConfig(...))

trl calls an async reward function with ``prompts``, ``completions``, ``completion_ids``, ``trainer_state``,
``log_extra``, ``log_metric`` (``environments`` too, given an ``environment_factory``) and every other dataset column as
a list (``trl/trainer/grpo_trainer.py``, ``_calculate_rewards``); it takes ``None`` as "no reward for this sample". The
function built here sends one ``/v1/judge`` request per generation batch, split only where one request would pass
judge-serve's bounds (``max_items`` samples, its ``max_batch_items``; ``max_judgments`` (sample, criterion) judgments,
its ``max_judgments_per_request``: 64 samples of 20 criteria, a POLLUX task's usual count, are 1,280; ``max_body_bytes``
of encoded JSON, under its ``max_body_bytes``, whose 413 would stop training), its requests holding at most
``max_queued_judgments`` judgments in flight together (its ``max_queued_judgments``, past which it answers 503
``queue_full``), turns each sample's verdicts into a
reward by ``judge.rewards.reward_of``, answers ``None`` for every judged sample of a request that failed transiently (a
5xx, a timeout, no connection) after the retry policy's tries (a sample with nothing to judge still gets
``empty_answer``), logs a warning counting the samples left without a reward, and, when trl passes them, logs the
judge's rationales as a completions-table column (``log_extra``) and the failure count, of it the judgments
judge-serve's engine refused (``engine_refusals``), the latency, and the counts of empty answers and closed gates as
metrics (``log_metric``). A sample whose own body
is over ``max_body_bytes`` is not sent: each of its criteria fails (``context_length_exceeded``), valued by the rule's
``on_failure``, as judge-serve values an answer too long for the judge. A request judge-serve refuses (a 4xx other than
408/409/429: a wrong key or URL, a malformed sample) raises ``RewardRequestRefused``: retrying cannot mend it, and the
same sample would fail every step. For the same reason the first call first asks judge-serve's ``GET /v1/models``
(``JudgeRewardClient.first_contact``): a URL nothing answers at raises ``EndpointUnusable`` naming it, rather than a
``None`` for every sample of every step; one that stops answering later (every request of ``max_failed_calls``
calls in a row failed after the retries) raises ``EndpointUnusable`` too. Given ``end_token_ids``, a completion
whose ``completion_ids`` end in none of them (trl's own test of a completion its ``max_completion_length`` cut) is
not sent either: ``/v1/judge`` items carry no "cut" flag, and a cut answer judged as it stands is rated as a whole
one. Each of its criteria fails (``cut``), valued by the rule's ``on_failure``, and the count goes to the metric
``<name>/cut_completions``.

The instruction is the prompt's last user turn (conversational, its content a string or trl's list of typed parts,
whose text parts are joined; or a text prompt already rendered through a ChatML, Llama 3, Gemma or DeepSeek-R1 chat
template) or the prompt itself (plain text: a prompt rendered through another template needs ``instruction_column``),
or the dataset column ``instruction_column`` names; the criteria are ``criteria`` (one list, or ``"auto"``, for every
sample) or the column ``criteria_column`` names, per row as a ``/get_reward`` label gives them (a list or a JSON
string of one, ``"auto"``, or null where the row's ``task_type`` names the task whose criteria set to use); a
reference answer comes from ``reference_column`` when given (a column named that trl does not pass is a ``ValueError``
naming it and the columns trl passed; one of another length than ``prompts``, naming it and both counts); the
dataset's ``task_type``, ``task_subtype`` and ``task_subsubtype`` columns, when it has them, pick each named criterion's
rubric variant, as a ``/get_reward`` label's task fields do (a value neither text nor null is refused naming its
column and row, as ``/get_reward`` refuses it). The answer
judged is ``judge.rewards.policy_answer`` of the completion's text (``judge.rewards.completion_text``: a
conversational completion's last assistant turn), and a cut completion is told by ``judge.rewards.cut_completions``:
the rules ``train.grpo_rewards`` reads its completions by.

**verl** (``custom_reward_function`` in its trainer config)::

    custom_reward_function:
      path: <the installed judge/verl_reward.py>   # or pkg://judge.reward_clients (verl 0.7 and later)
      name: compute_score            # or compute_score_async, which verl's reward loop awaits
      reward_kwargs: {judge_url: "http://judge:8000"}

(not this file's path: verl executes a path's file outside ``sys.modules``, where this module's dataclasses fail;
``judge.verl_reward`` re-exports the two functions by an ordinary import.)

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs)``
(``verl/experimental/reward_loop/reward_manager/naive.py``; ``verl/trainer/ppo/reward.py`` merges ``reward_kwargs``)
and takes a float or ``{"score": ..., other logged keys}``: each key's values are collected over the batch, so every
sample's dict carries the same numeric keys (``judge_failures``, ``judge_engine_refused``, ``judge_gate_closed``,
``judge_empty_answer``). ``reward_kwargs`` are the functions' keyword arguments
(``judge_url``; ``rule`` as a mapping, ``model``, ``timeout_s`` as ``trl_reward_function`` takes them); a key they do
not take (a misspelt ``rules``) is a ``TypeError`` naming it, never a run on the default rule. The instruction,
criteria and reference answer (and the task fields) come from ``extra_info`` (keys ``instruction``, ``criteria``,
``reference_answer``, ``task_type``, ``task_subtype``, ``task_subsubtype``; ``criteria`` in a label's forms) and, for
what it lacks, from ``ground_truth`` read as a label (a JSON object or a string holding one; any other string is the
reference answer); a key whose value is None counts as absent (verl reads ``extra_info`` from parquet, where a row
without a key holds None), and a task field neither text nor None is refused naming it, as is a ``ground_truth`` neither
label, text nor None where the reference answer would be read from it (``extra_info['reference_answer']``, ``""``
for none, leaves another reward function's ground truth alone). verl needs a number for
every sample: a rule that skips (``on_failure="skip"``) is refused, and a request that fails after the retries
raises.

Both follow the shared retry policy (``judge.plumbing.retry``: connection errors, timeouts, 408/409/429/5xx,
``Retry-After`` honoured) and send ``Authorization: Bearer`` with the key from ``$JUDGE_SERVE_API_KEY`` (or the
variable ``api_key_env`` names). A refusal (``RewardRequestRefused``) carries judge-serve's message with its
``items[k]`` named as the caller's sample, ``samples[i]``: the i-th sample given (trl: the i-th prompt and completion
of the generation batch), whichever request it went in.

Why one module of ~1,400 lines: the trl and verl adapters are thin over one client (the request, its splitting under
judge-serve's bounds, the retry policy, the refusal's mapping back to the caller's samples); apart, each adapter
would import the other's private request code, and a reader of one framework's reward would read two files.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import numbers
import os
import re
import sys
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from judge.plumbing.console_logging import visible
from judge.plumbing.failing_streak import FailingStreak
from judge.plumbing.invisible_text import is_blank
from judge.plumbing.json_reading import (JSON_REFUSALS, counted, json_or_none, lone_surrogate_at, unreadable_answer,
                                         unreadable_json, value_words)
from judge.plumbing.retry import (DEFAULT_WAIT_BUDGET_S, EndpointUnusable, GenerationAborted, RetryPolicy,
                                  failure_said, is_transient, list_models, retry_stop_said, retryable_status,
                                  server_message, status_of)
from judge.rewards import (CriterionReward, FailedVerdictsWatch, Reward, RewardRule, completion_text, content_text,
                           cut_completions, engine_refusals, failures_by_criterion, label_criterion, policy_answer,
                           prompt_opens_reasoning, reward_of)
from judge.verdicts import VerdictError, format_score
from judge.wire import JudgeResponse

__all__ = ["RewardSample", "judge_request_body", "rewards_from_response", "JudgeRewardClient", "trl_reward_function",
           "compute_score", "compute_score_async", "sample_from_verl", "DEFAULT_TIMEOUT_S", "DEFAULT_MAX_ITEMS",
           "DEFAULT_MAX_JUDGMENTS", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_VERL_CONCURRENCY", "request_chunks",
           "encoded_body", "TASK_FIELDS", "CONNECT_TIMEOUT_S", "request_timeout", "RewardRequestRefused", "CUT_REASON",
           "label_criteria", "VERL_EXTRA_KWARGS", "METRIC_SLASH", "failures_by_metric_key",
           "DEFAULT_MAX_FAILED_CALLS", "DEFAULT_MAX_QUEUED_JUDGMENTS"]

log = logging.getLogger("judge.reward_clients")

#: Seconds one /v1/judge request may take: past judge-serve's own bound (``request_timeout_s``, 600 s), so a slow
#: request is answered by the server (504, retried) rather than abandoned and sent again while the server is still
#: judging the first copy (each resend would add its whole work to the engines' load).
DEFAULT_TIMEOUT_S = 630.0
#: Seconds to open a connection to judge-serve. Apart from ``timeout_s``: a plain float bounds the connect too, and a
#: host that drops packets would hold each of the retry policy's attempts for the whole 630 s (five attempts: over
#: 50 minutes of a stalled step) where a server that is up accepts within milliseconds.
CONNECT_TIMEOUT_S = 10.0
#: Seconds the first contact's ``GET /v1/models`` may take to answer: judge-serve answers it from memory, with no
#: judgment behind it, so a read as long as a judgment's (``timeout_s``) would only stretch a stalled server's wait.
FIRST_CONTACT_READ_S = 30.0
#: verl's reward loop starts one ``compute_score_async`` per sample at once: at most this many of their requests are
#: in flight per event loop. verl runs one such loop per agent-loop worker, 8 by default: 8 x 64 is judge-serve's
#: whole default ``max_connections`` (512), past which it answers 503 (docs/rewards.md, "Connections under verl").
DEFAULT_VERL_CONCURRENCY = 64
#: Items per /v1/judge request: judge-serve's default ``max_batch_items``.
DEFAULT_MAX_ITEMS = 64
#: (item, criterion) judgments per /v1/judge request: judge-serve's default ``max_judgments_per_request``.
DEFAULT_MAX_JUDGMENTS = 512
#: Bytes of one /v1/judge body, counted exactly as sent (``encoded_body``): half a MiB under judge-serve's default
#: ``max_body_bytes`` (8 MiB, 8,388,608), so a server or proxy set to "8 MB" (8,000,000) still takes every request.
DEFAULT_MAX_BODY_BYTES = 7_864_320
#: (sample, criterion) judgments one trl call keeps in flight across its requests: judge-serve's default
#: ``max_queued_judgments``, past which it answers a ``/v1/judge`` request 503 ``queue_full`` with a ``Retry-After`` of
#: a few seconds; the retry policy's tries end long before the judgments ahead of it drain, and its samples would get
#: no reward.
DEFAULT_MAX_QUEUED_JUDGMENTS = 16_384


#: The item's task fields: with criteria named, they pick each name's rubric variant for the task, as a
#: ``/get_reward`` label's do (``judge.taxonomy``), so one label gives one rubric on every reward path; with none,
#: ``task_type`` names the task whose criteria set to judge on.
TASK_FIELDS = ("task_type", "task_subtype", "task_subsubtype")
#: The criteria that judge-serve's task classifier chooses from the instruction and answer (``"criteria": "auto"``).
AUTO = "auto"


@dataclass(frozen=True)
class RewardSample:
    """One answer to reward: the ``/v1/judge`` item's fields (``answer`` as the judge will read it, "" for none;
    ``task``: the ``TASK_FIELDS`` given, by name). ``criteria`` as the wire takes them, as a ``/get_reward`` label
    gives them: a tuple of names, ids and ``{name, rubrics}`` objects; ``AUTO``; or None, left out of the item, for
    the criteria set of the task ``task_type`` names."""

    instruction: str
    answer: str
    criteria: tuple[Any, ...] | str | None
    reference_answer: str | None = None
    task: tuple[tuple[str, str], ...] = ()

    def to_item(self) -> dict[str, Any]:
        item: dict[str, Any] = {"instruction": self.instruction, "answer": self.answer}
        if self.criteria is not None:
            item["criteria"] = self.criteria if isinstance(self.criteria, str) else list(self.criteria)
        if self.reference_answer:
            item["reference_answer"] = self.reference_answer
        item.update(self.task)
        return item


def _text_or_none(value: Any, where: str) -> str | None:
    """A sample's text field (an instruction, a reference answer) as a string, or None where it has none: None, "",
    or a float NaN, a pandas frame's empty cell (a row built from one by hand; Arrow and parquet give None).

    Raises:
        ValueError: naming ``where``: another type (a number, a list), which judge-serve would refuse, or JSON
            could not even carry (a NaN among other values).
    """
    if value is None or (isinstance(value, float) and value != value):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a string or null, got {value_words(value)}")
    return value or None


def _task(source: Mapping[str, Any], where: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    """The ``TASK_FIELDS`` ``source`` gives (a string with more than whitespace each, as judge-serve reads a task
    field: ``serve.schema.task_level_named``), in their order; ``where(name)`` names a field in an error.

    Raises:
        ValueError: a task field that is neither text nor null (a number, a list), naming it. ``/get_reward``
            refuses such a label; passed over here, a row with criteria would be judged on another task's rubric
            variants, and one without on the message that it names no task.
    """
    task = []
    for name in TASK_FIELDS:
        value = _text_or_none(source.get(name), where(name))
        if value is not None and value.strip():
            task.append((name, value))
    return tuple(task)


def _judgments_of(sample: RewardSample) -> int:
    """The judgments a sample asks judge-serve for, as its ``max_judgments_per_request`` counts them once they are
    resolved: its criteria; its task's set (criteria None; the largest set for a task the taxonomy lacks, which
    judge-serve refuses anyway); an ``"auto"`` sample's as the largest task's set, the most the classifier's choice
    can come to."""
    if isinstance(sample.criteria, tuple):
        return len(sample.criteria)
    from judge.criteria import task_path
    from judge.taxonomy import TaxonomyError, load_taxonomy

    taxonomy = load_taxonomy()
    if sample.criteria is None:
        try:
            path = task_path(*(dict(sample.task).get(name) for name in TASK_FIELDS))
            if path:
                return len(taxonomy.criteria_for(*path))
        except TaxonomyError:
            pass
    return max(len(task.criteria) for task in taxonomy.tasks)


def judge_request_body(samples: Sequence[RewardSample], model: str | None = None) -> dict[str, Any]:
    """The ``/v1/judge`` body for the samples that have an answer (those with none are not sent), with
    ``"oversize": "fail"``: a policy's answer too long for the judge's context is that sample's failed criterion
    (valued by the rule's ``on_failure``), not a 400 that would take every sample of the request with it."""
    body: dict[str, Any] = {"items": [s.to_item() for s in samples if s.answer], "oversize": "fail"}
    if model:
        body["model"] = model
    return body


def encoded_body(body: Mapping[str, Any]) -> bytes:
    """A request body as the clients send it: compact UTF-8 JSON. Encoded here rather than by httpx's ``json=``, whose
    encoding changed between the versions this project allows (0.27 escapes every Cyrillic letter to six bytes, 0.28
    sends it as two), so the size the requests are cut by is the size judge-serve counts against its limit."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _refuse_unencodable(value: Any, where: str, name_of: str = "") -> None:
    """Refuse the first text in ``value`` (a key or a value, depth first) holding a lone surrogate, which a string
    built in Python (or read from a JSON ``\\ud800`` escape) may hold and UTF-8 cannot: ``encoded_body``'s own
    ``UnicodeEncodeError`` names neither the sample nor the field. ``name_of`` is " (a field's name)" where ``value``
    is a key.

    Raises:
        ValueError: naming ``where`` and the field's path below it (cut past ``_FIELD_SHOWN_CHARS`` characters, its
            length said), and the surrogate's place in the text.
    """
    from judge.wire import path_key

    if isinstance(value, str):
        if (at := lone_surrogate_at(value)) is not None:
            raise ValueError(f"{_shown_field(where)}{name_of}: not valid Unicode text: a lone surrogate "
                             f"(U+{ord(value[at]):04X}) at character {at}, which UTF-8 cannot carry: not sent")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _refuse_unencodable(key, where, " (a field's name)")
            _refuse_unencodable(item, f"{where}.{path_key(str(key))}")
    elif isinstance(value, (list, tuple)):
        for j, item in enumerate(value):
            _refuse_unencodable(item, f"{where}[{j}]")


def _encoded(value: Mapping[str, Any], parts: Iterable[tuple[str, Any]]) -> bytes:
    """``encoded_body(value)``, or the refusal of the text it cannot encode: ``parts`` are the pieces of ``value``
    searched for it, each with the name an error gives it (a sample by the caller's index, ``samples[3]``).

    Raises:
        ValueError: a text holding a lone surrogate (``_refuse_unencodable``).
    """
    try:
        return encoded_body(value)
    except UnicodeEncodeError:
        for where, part in parts:
            _refuse_unencodable(part, where)
        raise


def _encoded_items(body: Mapping[str, Any], rows: Sequence[int]) -> bytes:
    """A ``judge_request_body`` encoded, its items named ``samples[row]`` (``rows``: the caller's index of each) in a
    refusal, the rest of the body (the model's name) ``body``."""
    rest = {k: v for k, v in body.items() if k != "items"}
    return _encoded(body, [*((f"samples[{row}]", item) for row, item in zip(rows, body["items"])), ("body", rest)])


def request_chunks(samples: Sequence[RewardSample], max_items: int, max_judgments: int,
                   max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES, model: str | None = None,
                   ) -> list[list[RewardSample]]:
    """The samples in order, cut into as few consecutive requests as keep each within ``max_items`` sent samples,
    ``max_judgments`` (sample, criterion) judgments and ``max_body_bytes`` bytes of ``encoded_body`` (None: no byte
    bound; ``model``: the name the body will carry). A sample without an answer is not sent and counts for none of
    them. A sample with more criteria than ``max_judgments`` goes alone; judge-serve refuses it (a 400, raised as
    ``RewardRequestRefused`` naming the sample). A sample whose own body is over ``max_body_bytes`` goes alone too,
    and the client does not send it (``JudgeRewardClient``: its criteria fail).

    Raises:
        ValueError: a sample's text holding a lone surrogate, which UTF-8 cannot carry, naming ``samples[i]`` (its
            index in ``samples``) and its field.
    """
    # A body is its envelope with the items' encodings between the brackets of "items":[], a comma between two.
    envelope = len(encoded_body(judge_request_body([], model)))
    chunks: list[list[RewardSample]] = [[]]
    items = judgments = size = 0
    for i, sample in enumerate(samples):
        n = _judgments_of(sample) if sample.answer else 0
        item = sample.to_item() if sample.answer else None  # a sample with no answer is sent as none
        item_bytes = len(_encoded(item, [(f"samples[{i}]", item)])) if item is not None else 0
        over_bytes = max_body_bytes is not None and envelope + size + bool(items) + item_bytes > max_body_bytes
        if sample.answer and chunks[-1] and (items + 1 > max_items or judgments + n > max_judgments or over_bytes):
            chunks.append([])
            items = judgments = size = 0
        chunks[-1].append(sample)
        if sample.answer:
            size += bool(items) + item_bytes
        items += bool(sample.answer)
        judgments += n
    return chunks if chunks[0] else []


def rewards_from_response(samples: Sequence[RewardSample], response: Mapping[str, Any],
                          rule: RewardRule, first: int = 0) -> list[Reward | None]:
    """Each sample's reward from a ``/v1/judge`` response to ``judge_request_body(samples)``; None for a sample
    with no answer (its value is ``rule.empty_answer``). ``first``: the caller's index of ``samples[0]``, which an
    error names its samples from.

    The items of a reward request carry no id, so the response's are matched by position: judge-serve answers them
    in request order, each with its ``index`` (its place in the request) and the id it was sent with, None
    (``judge.wire.JudgeResponseItem``). A response that is no answer to this request is refused, never valued: a
    sample's reward computed on another's verdicts is a wrong reward nothing would tell from a right one.

    Raises:
        ValueError: a response that is not a ``JudgeResponse``, or no answer to the request: another number of items
            than samples sent, or an item at another ``index`` than its place or with an id (none was sent), naming
            the sample.
    """
    parsed = JudgeResponse.from_json(response)
    sent = [i for i, s in enumerate(samples) if s.answer]
    if len(parsed.items) != len(sent):
        raise ValueError(f"/v1/judge answered {len(parsed.items)} items for {len(sent)} sent")
    out: list[Reward | None] = [None] * len(samples)
    for k, (i, item) in enumerate(zip(sent, parsed.items)):
        where = f"the sent item {k} (samples[{first + i}])"
        if item.index != k:
            raise ValueError(f"/v1/judge answered the item at index {item.index} in the place of {where}: the items "
                             "of a reward request carry no id and are matched by position")
        if item.id is not None:  # the server's id cut: a proxy's answer may echo any length
            echoed = repr(item.id)
            echoed = echoed if len(echoed) <= 200 else echoed[:200] + "..."
            raise ValueError(f"/v1/judge answered the item {echoed} in the place of {where}, which carried no id")
        out[i] = reward_of(item.results, rule)
    return out


_ITEM_PATH = re.compile(r"\bitems\[(\d+)\]")


class RewardRequestRefused(ValueError):
    """judge-serve refused a reward request with a 4xx that retrying cannot mend (every one but 408, 409 and 429): a
    wrong key or URL, or a sample it cannot judge, which would fail the same way at every step.

    Attributes:
        status: the HTTP status.
        message: judge-serve's message, its ``items[k]`` named as the caller's ``samples[i]``.
        param: judge-serve's ``param`` named the same way (``samples[2].criteria[0]``), or None.
        sample: the index of the sample it names (``samples[i]``), or None when it names none.
        url: the URL that refused it: whoever answers there (a proxy, another server at a wrong port) is named,
            not assumed to be judge-serve.
    """

    def __init__(self, status: int, message: str, param: str | None, sample: int | None, url: str = ""):
        # The server's words shown as a terminal shows them (an ESC sequence could clear the screen); ``message`` keeps
        # them as sent.
        super().__init__(f"the reward request to {url or 'judge-serve'} was refused (HTTP {status}): "
                         f"{visible(message, 1000)}")
        self.status, self.message, self.param, self.sample, self.url = status, message, param, sample, url

    @classmethod
    def of(cls, response: Any, rows: Sequence[int], url: str = "") -> "RewardRequestRefused":
        """The refusal in ``response``, the answer of ``url`` to a request whose item k was sample ``rows[k]``."""
        try:
            error = response.json().get("error")
        except (ValueError, AttributeError, RecursionError):  # RecursionError: JSON nested past what json.loads holds
            error = None
        param = error.get("param") if isinstance(error, dict) and isinstance(error.get("param"), str) else None

        def sample_path(match: re.Match) -> str:
            k = int(match.group(1))
            return f"samples[{rows[k]}]" if k < len(rows) else match.group(0)

        where = _ITEM_PATH.search(param or "")
        sample = rows[int(where.group(1))] if where and int(where.group(1)) < len(rows) else None
        message = _ITEM_PATH.sub(sample_path, server_message(response, 1000))
        return cls(response.status_code, message, _ITEM_PATH.sub(sample_path, param) if param else None, sample, url)


def _checked(response: Any, rows: Sequence[int], url: str) -> dict[str, Any]:
    """``response``'s JSON body (``url``'s answer); a refusal retrying cannot mend raises ``RewardRequestRefused``
    (not retried), any other failure ``httpx.HTTPStatusError`` (retried by the policy), a success whose body is no
    JSON json.loads reads (a proxy's HTML page, nesting past its depth) a ``ValueError`` naming ``url`` (not retried:
    it is no answer to the request)."""
    if 400 <= response.status_code < 500 and not retryable_status(response.status_code):
        raise RewardRequestRefused.of(response, rows, url)
    response.raise_for_status()
    try:
        body = response.json()
    except JSON_REFUSALS as err:  # every ValueError json.loads raises on bytes is unreadable_answer's to say
        said = unreadable_answer(err, response.status_code)  # any 2xx passed raise_for_status: a proxy's 201 too
        raise ValueError(f"{url} answered {said}") from None
    # A judgment judge-serve's engine aborted (error "aborted": a paused engine) is no verdict about the answer:
    # the request is asked again, where valued as a failure it would lower the policy's reward for the engine's sake.
    aborted = sum(result.get("error") == VerdictError.ABORTED for item in _list(body, "items") if isinstance(item, dict)
                  for result in _list(item, "results") if isinstance(result, dict))
    if aborted:
        raise GenerationAborted(f"judge-serve's engine aborted {aborted} judgments of the request")
    return body


#: What stands for "/" in a criterion's name as a metric key: W&B and TensorBoard nest a key at each "/", so POLLUX's
#: "… литературных направлений / писателей" would open a panel group of its own. U+2215 (division slash) looks alike
#: and nests nothing.
METRIC_SLASH = "\u2215"


def failures_by_metric_key(rewards: Sequence[Reward | None]) -> dict[str, int]:
    """Failed judgments per criterion name (``failures_by_criterion``), each name made a metric key that does not
    nest: "/" written as ``METRIC_SLASH``. Criteria that share a name (POLLUX's domain variants of one criterion) are
    one key, their failures summed, as ``failures_by_criterion`` counts them; two names that become one key sum too."""
    keyed: dict[str, int] = {}
    for criterion, (n_failed, _) in failures_by_criterion(rewards).items():
        key = criterion.replace("/", METRIC_SLASH)
        keyed[key] = keyed.get(key, 0) + n_failed
    return keyed


def _list(container: Any, key: str) -> list:
    value = container.get(key) if isinstance(container, dict) else None
    return value if isinstance(value, list) else []


def _value(reward: Reward | None, rule: RewardRule) -> float | None:
    return reward.value if reward is not None else rule.empty_answer


def _tls() -> Any:
    """The TLS settings every reward request's httpx client is built with (``verify``), made as httpx makes its
    default (the CA bundle of ``$SSL_CERT_FILE``, ``$SSL_CERT_DIR`` or certifi) once per trust store those two name
    at the time of the request, so a driver that names its own store after a first request is followed. Left to
    httpx, each client built reads and parses the bundle again, synchronously: the async clients build one per
    request, inside the caller's event loop (verl's reward loop: one per sample), where that work holds every other
    request."""
    return _tls_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _tls_for(cafile: str | None, capath: str | None) -> Any:
    """``_tls`` for one pair of ``$SSL_CERT_FILE`` and ``$SSL_CERT_DIR``: the arguments key the cache, httpx reads
    the same two from the environment."""
    import httpx

    return httpx.create_ssl_context()


def request_timeout(timeout_s: float) -> Any:
    """The ``httpx.Timeout`` of one ``/v1/judge`` request: ``timeout_s`` to read, write and wait for a pooled
    connection, ``CONNECT_TIMEOUT_S`` (or ``timeout_s`` when shorter) to connect."""
    import httpx

    return httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))


def _check_bounds(timeout_s: Any, max_body_bytes: Any, where: str = "") -> None:
    """Refuse a ``timeout_s`` that is no finite number of seconds over 0, or a ``max_body_bytes`` that is no whole
    number of bytes over 0 nor None, naming ``where`` + the argument: 0 bytes would leave every sample unsent, each
    reward its failure value with only warnings, and a string fail deep in the first step.

    Raises:
        ValueError: naming ``where`` + ``timeout_s`` or ``max_body_bytes`` and the value given.
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or not 0 < timeout_s < math.inf:
        raise ValueError(f"{where}timeout_s: must be a finite number of seconds, more than 0 (one request's wait for "
                         f"its answer), got {timeout_s!r}")  # NaN fails both bounds
    if max_body_bytes is not None and (isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int)
                                       or max_body_bytes < 1):
        raise ValueError(f"{where}max_body_bytes: must be a whole number of bytes, 1 or more, or None (no bound), got "
                         f"{max_body_bytes!r}")


def _check_count(value: Any, name: str, least: int, what: str) -> None:
    """Refuse a ``value`` that is no whole number of ``least`` or more (a bool is none), naming ``name``: a string
    or a float would fail deep in the first step, a count under ``least`` bound nothing or stop every request.

    Raises:
        ValueError: naming ``name``, what the count counts (``what``) and the value given.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name}: must be a whole number of at least {least} ({what}), got {value!r}")


def _api_key(api_key_env: str) -> str:
    return os.environ.get(api_key_env, "") if api_key_env else ""


class JudgeRewardClient:
    """Rewards from a judge-serve, sync and async, through the shared retry policy.

    Args:
        url: judge-serve's root URL (``http://host:8000``; a trailing ``/v1`` or ``/v1/judge`` is accepted).
        rule: the reward rule: a ``RewardRule``, or a mapping of its fields (``RewardRule.from_dict``, as verl's
            ``reward_kwargs`` give it); None: ``RewardRule()``.
        api_key_env: the variable holding judge-serve's key (empty: send none).
        model: the served model name to send (optional).
        timeout_s: seconds per request to answer; connecting has ``CONNECT_TIMEOUT_S`` (``request_timeout``).
        retry: the retry policy (``judge.plumbing.retry.RetryPolicy``; default: 4 retries, one request's waits
            together at most ``DEFAULT_WAIT_BUDGET_S``, so a judge-serve answering 503 with a long ``Retry-After``
            holds a step for at most that plus the attempts' ``timeout_s``).
        max_body_bytes: the largest body sent (``encoded_body``; None: no bound). One sample over it is not sent:
            its criteria fail (``_unsent_reward``); several are the caller's to split (``request_chunks``).

    Raises:
        ValueError: a ``timeout_s`` that is no finite number of seconds over 0, a ``max_body_bytes`` that is no whole
            number over 0 nor None, naming it.
    """

    def __init__(self, url: str, *, rule: RewardRule | Mapping[str, Any] | None = None,
                 api_key_env: str = "JUDGE_SERVE_API_KEY", model: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, retry: RetryPolicy | None = None,
                 max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES):
        _check_bounds(timeout_s, max_body_bytes)
        root = url.rstrip("/")
        for tail in ("/v1/judge", "/v1"):  # the endpoint's own URL, or the OpenAI base URL, given for the root
            root = root[: -len(tail)] if root.endswith(tail) else root
        self.url = root + "/v1/judge"
        self.rule = _rule(rule)
        self.model, self.timeout_s = model, timeout_s
        self.retry = retry or RetryPolicy(max_retries=4, backoff_s=1.0, max_backoff_s=30.0,
                                          wait_budget_s=DEFAULT_WAIT_BUDGET_S, bound_flag="retry_wait_budget_s")
        self.api_key_env = api_key_env
        self.max_body_bytes = max_body_bytes

    def first_contact(self) -> None:
        """``GET /v1/models`` on judge-serve, through the retry policy (``judge.plumbing.retry.list_models``): a URL
        nothing answers at, or a key it refuses, said once naming the URL, before a trainer takes every failed request
        as a transient one. Each attempt connects within ``CONNECT_TIMEOUT_S`` and reads within
        ``FIRST_CONTACT_READ_S`` (``timeout_s`` when shorter), so a host dropping packets is said in seconds, not in
        retries of a whole request's bound. A judge-serve still loading answers 503 until its retries are spent:
        start the trainer once ``/ready`` answers 200.

        Raises:
            EndpointUnusable: judge-serve at the URL cannot be used (its message says why).
        """
        key = _api_key(self.api_key_env)
        list_models(self.url[: -len("/judge")], api_key=key, key_source=f"${self.api_key_env}", what="judge-serve",
                    policy=self.retry, bound_flag="",
                    timeout=request_timeout(min(self.timeout_s, FIRST_CONTACT_READ_S)))

    def _headers(self) -> dict[str, str]:
        key = _api_key(self.api_key_env)
        return {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}

    def _unsendable(self, samples: Sequence[RewardSample], rows: Sequence[int], size: int) -> list[Reward | None]:
        """The rewards of a request whose body (``size`` bytes) is over ``max_body_bytes``: judge-serve would refuse
        it whole (413), a refusal that would come back every step. One sample too large by itself gets its failure
        value; more are a caller's error (``request_chunks`` cuts under the bound)."""
        if len(rows) > 1:
            raise ValueError(f"{len(rows)} samples make a /v1/judge body of {size} bytes, over max_body_bytes "
                             f"({self.max_body_bytes}): split them with request_chunks")
        k = next(i for i, sample in enumerate(samples) if sample.answer)
        reason = f"its /v1/judge body is {size} bytes, over max_body_bytes ({self.max_body_bytes}): not sent"
        log.warning("samples[%d]: %s; each of its criteria fails (context_length_exceeded)", rows[0], reason)
        out: list[Reward | None] = [None] * len(samples)
        out[k] = _unsent_reward(samples[k], self.rule, reason, rows[0])
        return out

    def rewards(self, samples: Sequence[RewardSample], first: int = 0) -> list[Reward | None]:
        """The samples' rewards (one request), synchronously.

        Args:
            samples: the samples to judge.
            first: the caller's index of ``samples[0]``, which a refusal names its samples from.

        Raises:
            RewardRequestRefused: judge-serve refused the request (a 4xx retrying cannot mend), at once.
            httpx.HTTPError: the request failed after the retries.
            ValueError: more than one sample and a body over ``max_body_bytes``; a task or criterion of a sample too
                large to send that judge-serve would refuse (an unknown name, an empty rubric, a rubric with no scale);
                a sample's text holding a lone surrogate, which UTF-8 cannot carry (naming ``samples[i]`` and its
                field), before anything is sent.
        """
        import httpx

        body = judge_request_body(samples, self.model)
        if not body["items"]:
            return [None] * len(samples)
        rows = _sent_rows(samples, first)
        data = _encoded_items(body, rows)
        if self.max_body_bytes is not None and len(data) > self.max_body_bytes:
            return self._unsendable(samples, rows, len(data))

        def attempt() -> dict[str, Any]:
            return _checked(httpx.post(self.url, content=data, headers=self._headers(),
                                       timeout=request_timeout(self.timeout_s), verify=_tls()), rows, self.url)

        try:
            return rewards_from_response(samples, self.retry.call(attempt), self.rule, first)
        except httpx.HTTPError as err:
            raise self._named(err)

    async def arewards(self, samples: Sequence[RewardSample], first: int = 0) -> list[Reward | None]:
        """The samples' rewards (one request), awaited; as ``rewards``."""
        return (await self._arewards_requested(samples, first))[1]

    async def _arewards_requested(self, samples: Sequence[RewardSample],
                                  first: int = 0) -> tuple[bool, list[Reward | None]]:
        """As ``arewards``, with whether a request was made: none for samples with nothing to judge or a body over
        ``max_body_bytes``, whose values say nothing of whether judge-serve answers."""
        import httpx

        body = judge_request_body(samples, self.model)
        if not body["items"]:
            return False, [None] * len(samples)
        rows = _sent_rows(samples, first)
        data = _encoded_items(body, rows)
        if self.max_body_bytes is not None and len(data) > self.max_body_bytes:
            return False, self._unsendable(samples, rows, len(data))
        async with httpx.AsyncClient(timeout=request_timeout(self.timeout_s), verify=_tls()) as client:

            async def attempt() -> dict[str, Any]:
                return _checked(await client.post(self.url, content=data, headers=self._headers()), rows, self.url)

            try:
                return True, rewards_from_response(samples, await self.retry.acall(attempt), self.rule, first)
            except httpx.HTTPError as err:
                raise self._named(err)

    def _named(self, err: Exception) -> Exception:
        """``err``, a request that still failed after the retries, with a note naming judge-serve's URL and the
        retries' bound: httpx's own message ("[Errno 111] Connection refused") names neither, and verl shows only the
        traceback. Its type is kept: the trl function takes it for a transient failure (no rewards this step)."""
        stopped = f"; {said}" if (said := retry_stop_said(err)) else ""  # a wait past the budget ended them early
        err.add_note(f"judge-serve at {self.url}: still failing after the retries (max_retries={self.retry.max_retries}"
                     f"{stopped})")
        return err


def _rule(rule: RewardRule | Mapping[str, Any] | None) -> RewardRule:
    """``rule`` as a ``RewardRule``, read when the client is built: a mapping by ``RewardRule.from_dict`` (the form
    verl's ``reward_kwargs`` give), so that the trl function takes it too rather than fail at the first step.

    Raises:
        judge.rewards.RewardRuleError: a mapping with an unknown field or a bad value, naming it.
        TypeError: neither a ``RewardRule`` nor a mapping.
    """
    if rule is None:
        return RewardRule()
    if isinstance(rule, RewardRule):
        return rule
    if isinstance(rule, Mapping):
        return RewardRule.from_dict(rule, where="rule")
    # value_words: verl's reward_kwargs come from its YAML config (``rule: gate``); another Python object keeps its
    # class's name
    raise TypeError(f"rule: expected a RewardRule or a mapping of its fields, got {value_words(rule)}")


def _sent_rows(samples: Sequence[RewardSample], first: int) -> list[int]:
    """The caller's index of each sample ``judge_request_body`` sends (those with an answer), in its order."""
    return [first + i for i, sample in enumerate(samples) if sample.answer]


def _unsent_reward(sample: RewardSample, rule: RewardRule, reason: str, row: int,
                  error: str = VerdictError.CONTEXT_LENGTH_EXCEEDED) -> Reward:
    """The reward of a sample not sent: each criterion a failed result, valued by the rule's ``on_failure``. A sample
    too large to send fails ``context_length_exceeded`` (the failure judge-serve gives an answer too long for the
    judge under ``"oversize": "fail"``); a completion the policy's length limit cut fails ``error="cut"``. The
    criteria are resolved by the resolver judge-serve uses (``judge.criteria``: a taxonomy name or id for the item's
    task, or a ``{name, rubrics}`` object read as the wire's ``CustomCriterion``; no criteria: the task's set), since
    the result needs each one's name and scale as judge-serve would give them, and a criterion judge-serve would
    refuse must be refused here too. An ``"auto"`` sample is not classified (judge-serve classifies none too long for
    its judge either): it fails on the criteria a failed choice gives, those for any text
    (``judge.criteria_auto.policy.fallback_criteria``).

    Raises:
        ValueError: naming ``samples[row].task_type`` or ``samples[row].criteria[j]`` (with its field, as
            judge-serve's ``param`` names it): a task or criterion judge-serve would refuse.
    """
    from judge.criteria import task_path
    from judge.taxonomy import TaxonomyError
    from judge.wire import JudgeResult

    try:
        task = task_path(*(dict(sample.task).get(name) for name in TASK_FIELDS))
    except TaxonomyError as err:  # its level names the column at fault (a blank one between is kept, as None)
        raise ValueError(f"samples[{row}].{TASK_FIELDS[err.level or 0]}: {err}") from None
    crits = (_set_criteria(sample.criteria, task, row) if not isinstance(sample.criteria, tuple)
             else _resolved_criteria(sample.criteria, task, f"samples[{row}].criteria"))
    return reward_of([JudgeResult(criterion=c.name, criterion_id=c.id, scale=list(c.scale.levels), error=error,
                                  error_reason=reason) for c in crits], rule)


#: The characters of a field's path a refusal of an unsent sample shows: the path of a client's unknown field is its
#: name, of any length.
_FIELD_SHOWN_CHARS = 200


def _shown_field(path: str) -> str:
    """A field's path as a refusal of an unsent sample shows it: past ``_FIELD_SHOWN_CHARS`` characters (a client's
    field may be named by a megabyte of text), its start and its length."""
    return path if len(path) <= _FIELD_SHOWN_CHARS else f"{path[:_FIELD_SHOWN_CHARS]}... [{len(path)} characters]"


def _resolved_criteria(criteria: tuple[Any, ...], task: tuple[str | None, ...] | None, where: str) -> list:
    """A sample's listed criteria resolved as judge-serve resolves them (``judge.criteria.resolve_criterion``).

    Raises:
        ValueError: naming ``where[j]`` (with its field, as judge-serve's ``param`` names it): a criterion
            judge-serve would refuse, in judge-serve's words. A field's path past ``_FIELD_SHOWN_CHARS`` characters
            (a client's unknown field may be named by a megabyte of text) is cut, its length said.
    """
    from pydantic import ValidationError

    from judge.criteria import CriterionError, resolve_criterion
    from judge.wire import MAX_RANKED_ERRORS, CustomCriterion, criterion_kind_error, error_rank, error_words, param_of

    # The criteria as judge-serve would read them, after the JSON encoding: a Python rubric mapping's integer
    # levels arrive as strings, a tuple as a list.
    specs = json.loads(json.dumps(list(criteria)))
    parsed: list[str | CustomCriterion] = []
    for j, spec in enumerate(specs):
        if isinstance(spec, str):
            parsed.append(spec)
            continue
        if not isinstance(spec, dict):
            raise ValueError(f"{where}[{j}]: {criterion_kind_error(spec)}")  # judge-serve's words
        try:
            parsed.append(CustomCriterion.model_validate(spec))
        except ValidationError as err:
            # judge-serve's field and words: the contract's ranking and wording of the wire type's errors, the
            # criterion's own fields named below its place
            def path(e: dict, spec: dict = spec) -> str:
                return param_of(tuple(e["loc"]), spec, e["type"] == "missing", e["input"])

            first = min(err.errors(include_url=False)[:MAX_RANKED_ERRORS], key=lambda e: error_rank(e, path(e)))
            raise ValueError(f"{where}[{j}].{_shown_field(path(first))}: {error_words(first)}") from None
    resolved = []
    for j, spec in enumerate(parsed):
        try:
            resolved.append(resolve_criterion(spec, task))
        except CriterionError as err:
            raise ValueError(f"{err.param(f'{where}[{j}]')}: {err}") from None
    return resolved


def _refuse_repeated(criteria: tuple[Any, ...] | str | None, task: tuple[tuple[str, str], ...], where: str) -> None:
    """A sample whose listed criteria name one twice, refused before it is sent, as ``/get_reward`` refuses such a
    label (``judge.criteria.repeated_criterion``): judge-serve's ``/v1/judge``, which the clients call, judges what
    it is asked, so the criterion would be judged twice and weigh twice in the reward. A criterion that does not
    resolve is left to judge-serve's refusal, which names it.

    Raises:
        ValueError: naming ``where[k]``, the second mention.
    """
    if not isinstance(criteria, tuple) or len(criteria) < 2:
        return
    from judge.criteria import repeated_criterion, task_path

    try:  # the sample's task fields (``RewardSample.task``) as the path its names resolve under
        resolved = _resolved_criteria(criteria, task_path(*(dict(task).get(name) for name in TASK_FIELDS)), where)
    except (ValueError, LookupError, TypeError):  # a task (TaxonomyError), a criterion or a value JSON cannot encode:
        return  # judge-serve's refusal, or the request's encoding, names it
    repeat = repeated_criterion(resolved)
    if repeat is not None:
        first, k = repeat
        raise ValueError(f"{where}[{k}]: names the criterion at [{first}] ({resolved[k].name}) again: it would be "
                         "judged twice and weigh twice in the reward")


def _set_criteria(criteria: str | None, task: tuple[str, ...] | None, row: int) -> list:
    """The criteria judge-serve gives a sample that names none (its task's set) or ``"auto"`` whose choice failed
    (those for any text), resolved, or its refusal as a ``ValueError`` naming ``samples[row]``
    (``serve.schema.resolve_criteria``'s rules)."""
    from judge.criteria import ResolvedCriterion
    from judge.criteria_auto.policy import fallback_criteria
    from judge.taxonomy import TaxonomyError, load_taxonomy

    taxonomy = load_taxonomy()
    if criteria == AUTO:
        if task:
            raise ValueError(f"samples[{row}]: criteria 'auto' chooses the task from the text, but the sample names "
                             "its task (task_type): leave criteria out to judge it on its task's criteria")
        return [ResolvedCriterion.of(taxonomy.criteria[cid]) for cid in fallback_criteria(taxonomy)]
    if not task:
        raise ValueError(f"samples[{row}].criteria: required unless task_type names a task whose criteria set to use")
    try:
        return [ResolvedCriterion.of(c) for c in taxonomy.criteria_for(*task)]
    except TaxonomyError as err:  # unknown, or of several criteria sets: its level names the field at fault
        raise ValueError(f"samples[{row}].{TASK_FIELDS[err.level or 0]}: {err}") from None


# ---------------------------------------------------------------------------------------------------------------
# trl
# ---------------------------------------------------------------------------------------------------------------


#: How the chat templates whose end-of-turn markers ``judge.rewards.END_OF_TURN_MARKERS`` names open a user turn,
#: and the marker each closes it with: ChatML (Qwen2/2.5/3), Llama 3, Gemma, and the DeepSeek-R1 distills (``<｜User｜>``
#: up to ``<｜Assistant｜>``: full-width bars, U+FF5C, as in ``judge.rewards``' next-turn opening). A text prompt trl was
#: given already templated carries them; another template's needs ``instruction_column``. Only the template's own
#: closer ends the turn: another template's marker in the user's text ("<s>1000</s>" is HTML strikethrough) is the
#: instruction's.
_USER_TURNS = {"<|im_start|>user\n": "<|im_end|>", "<|start_header_id|>user<|end_header_id|>\n\n": "<|eot_id|>",
               "<start_of_turn>user\n": "<end_of_turn>", "<\uff5cUser\uff5c>": "<\uff5cAssistant\uff5c>"}
_USER_TURN = re.compile("|".join(re.escape(opener) for opener in _USER_TURNS))


def _instruction(prompt: Any) -> str:
    """The instruction in a trl prompt: the last user turn of a conversation, or of a text prompt rendered through a
    chat template (its content, up to the turn's end-of-turn marker); an untemplated text prompt is the instruction
    itself. Sent whole, a templated prompt would reach the judge with its system turn and template markers as the
    user's request."""
    if isinstance(prompt, str):
        first = _USER_TURN.search(prompt)
        if first is None:
            return prompt
        # The template is the one whose opener comes first (its own first user turn); another template's opener
        # later in the text is something the user wrote ("what does <｜User｜> mean in DeepSeek's template?")
        opener = first.group()
        content = prompt[prompt.rindex(opener) + len(opener):]
        end = content.find(_USER_TURNS[opener])
        return content[:end] if end >= 0 else content
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        if users:
            return content_text(users[-1].get("content"))
    raise ValueError("a prompt must be text or a list of chat messages with a user turn")


def _json_int(text: str) -> int:
    """An integer of a criteria JSON string, refused in words of its own past Python's conversion limit (whose
    ValueError tells the client to call ``sys.set_int_max_str_digits``)."""
    digits = len(text.lstrip("-"))
    if digits > sys.get_int_max_str_digits():
        raise ValueError(f"a number of {digits} digits")
    return int(text)


def _no_json_constant(name: str) -> None:
    # json.loads takes NaN, Infinity and -Infinity by default; RFC 8259 has no such values.
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def label_criteria(value: Any, where: str, task_named: bool = False) -> tuple[Any, ...] | str | None:
    """A sample's criteria as a ``/get_reward`` label gives them, in the forms the wire takes (``RewardSample``): a
    list (or a JSON string of one, or one criterion, a name or a ``{name, rubrics}`` object, plain or as a JSON
    string), ``"auto"``, or none (None, a
    JSON ``null``) where the sample names its task (``task_named``: judged on its task's criteria set). One reading
    for the three reward paths: the trl and verl clients' criteria and ``/get_reward``'s labels (``serve.rewards``).

    Raises:
        ValueError: naming ``where`` (or ``where[j]``, a criterion of the list): none of these, or a string opening
            with ``{`` or ``[`` that is not valid JSON (read as a name, it would be judged as a criterion's name).
    """
    if hasattr(value, "tolist"):  # a numpy array, as a parquet list column can arrive in verl's extra_info
        value = value.tolist()
    if isinstance(value, str):
        try:
            value = json.loads(value, parse_int=_json_int, parse_constant=_no_json_constant)
        except RecursionError:  # a JSON string nested past the parser's depth: no criteria list is that deep
            raise ValueError(f"{where}: a JSON string nested too deeply to be a list of criteria") from None
        except ValueError as err:
            if value.lstrip().startswith(("{", "[")):  # meant as JSON: read as a criterion's name, it would be judged
                raise ValueError(f"{where}: not valid JSON: {err}") from None
            value = value if value == AUTO else [value]  # one criterion's name
        else:  # one name JSON-encoded, as a dataset column that JSON-encodes every cell gives it: that name
            value = value if not isinstance(value, str) or value == AUTO else [value]
    if isinstance(value, Mapping):  # one {name, rubrics} criterion, as one name is taken for a list of one
        value = [value]
    if value == AUTO:
        return AUTO
    if value is None and task_named:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{where}: expected a non-empty list of criteria (names, ids or {{name, rubrics}} objects), "
                         f"\"{AUTO}\" (judge-serve's classifier chooses the task), or none where task_type names the "
                         "task whose criteria set to use")
    # Read as /get_reward's labels are: POLLUX-instructions rows' {criteria_name, rubrics}, Arrow's None keys dropped.
    # (label_criterion leaves a name as it is: only objects are passed to it, a long list of names costs no call each)
    return tuple(label_criterion(spec, f"{where}[{j}]") if isinstance(spec, Mapping) else spec
                 for j, spec in enumerate(value))


_criteria = label_criteria  # the name this module's callers know it by


def _verdict_text(part: CriterionReward) -> str:
    """``criterion: score — rationale`` (or the failure) for trl's completions table."""
    outcome = f"{format_score(part.score)}" if part.failure is None and part.score is not None else f"failed ({part.failure})"
    return f"{part.criterion}: {outcome}" + (f" — {part.feedback}" if part.feedback else "")


#: Why a completion trl's length limit cut gets its failure value without being judged (its criteria's
#: ``error_reason``, and the head of its row in ``<name>_verdicts``).
CUT_REASON = ("the policy's completion ends in no end_token_ids id: its length limit (max_completion_length) cut "
              "it, not judged")


def _names_task(task: tuple[tuple[str, str], ...]) -> bool:
    return any(name == "task_type" for name, _ in task)


def _check_columns(columns: Mapping[str, Any], criteria_column: str | None, instruction_column: str | None,
                   reference_column: str | None) -> None:
    """The dataset columns the reward function was told to read, among those trl passed (``columns``).

    Raises:
        ValueError: naming the first missing one by its argument, and the columns trl passed.
    """
    wanted = (("criteria_column", criteria_column), ("instruction_column", instruction_column),
              ("reference_column", reference_column))
    for argument, column in wanted:
        if column and column not in columns:
            raise ValueError(f"{argument}={column!r}: trl passed no such dataset column; it passed {sorted(columns)}")


def _check_lengths(prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any],
                   read: Iterable[str | None]) -> None:
    """One completion, and one value of each dataset column the function reads (``read``, and the task columns
    trl passed), per prompt, as trl's ``_calculate_rewards`` passes them.

    Raises:
        ValueError: naming the first list of another length and both counts: a shorter one would stop the call
            with a bare ``IndexError``, and a longer one, or fewer completions, would pair rows silently
            (``zip``) and give fewer rewards than prompts.
    """
    n = len(prompts)
    if len(completions) != n:
        raise ValueError(f"completions: {counted(len(completions), 'completion')} for {counted(n, 'prompt')}; one "
                         "per prompt")
    for column in (*read, *TASK_FIELDS):
        if column and column in columns and len(columns[column]) != n:
            raise ValueError(f"{column}: {counted(len(columns[column]), 'value')} for {counted(n, 'prompt')}; trl "
                             "passes a dataset column with one value per prompt")


def _end_token_ids(end_token_ids: Sequence[int | None] | None) -> frozenset[int] | None:
    """``end_token_ids`` as a set of token ids, a None in it passed over (``tokenizer.pad_token_id`` of a tokenizer
    without one). Refused when no id is left: every completion would be taken for one its length limit cut, and each
    would get the failure's value, silently."""
    if end_token_ids is None:
        return None
    if isinstance(end_token_ids, (str, bytes, Mapping)) or not isinstance(end_token_ids, Iterable):
        raise ValueError(f"end_token_ids: expected a list of token ids, got {type(end_token_ids).__name__}")
    ids = list(end_token_ids)
    for i, token in enumerate(ids):
        if token is not None and (isinstance(token, bool) or not isinstance(token, numbers.Integral) or token < 0):
            raise ValueError(f"end_token_ids[{i}]: {token!r} is not a token id (a non-negative integer)")
    if all(token is None for token in ids):
        raise ValueError("end_token_ids: no token id in it, so no completion would end and every one would count as "
                         "cut: pass the tokenizer's eos and pad ids and the model's generation_config eos ids, or None")
    return frozenset(int(token) for token in ids if token is not None)


#: How many ``trl_reward_function`` calls in a row, every request of each failed after the retries, stop training:
#: one failed call is a blip the retries did not ride out, three are a judge-serve gone (about three steps lost).
DEFAULT_MAX_FAILED_CALLS = 3


def _judge_gone(url: str, calls: int, last: BaseException) -> EndpointUnusable:
    """The stop of a run whose judge-serve failed every request of ``calls`` calls in a row, ``last`` the last
    failure (its status kept)."""
    error = EndpointUnusable(
        f"judge-serve at {url} failed every request of {calls} reward calls in a row, each after the retry policy's "
        f"tries (last {failure_said(last)}): from here on every judged sample would get None (no reward) at every "
        f"step; check judge-serve (its /health and log) and resume from the last checkpoint "
        f"(max_failed_calls={calls})", status_of(last))
    error.__cause__ = last
    return error


async def _within_judgments(calls: Sequence[tuple[int, Callable[[], Any]]], bound: int) -> list[Any]:
    """Each call's outcome (its exception, returned), the calls started in order as the judgments in flight (each
    call's count, ``calls[i][0]``) stay within ``bound``; a call of more than ``bound`` starts when none is in flight,
    as judge-serve admits one request alone whatever its count."""
    import asyncio

    room = asyncio.Condition()
    held = 0

    async def run(n: int, call: Callable[[], Any]) -> Any:
        nonlocal held
        async with room:
            await room.wait_for(lambda: held == 0 or held + n <= bound)
            held += n
        try:
            return await call()
        finally:
            async with room:
                held -= n
                room.notify_all()

    return await asyncio.gather(*(run(n, call) for n, call in calls), return_exceptions=True)


def trl_reward_function(
    url: str,
    *,
    criteria: Sequence[Any] | str | None = None,
    criteria_column: str | None = "criteria",
    instruction_column: str | None = None,
    reference_column: str | None = None,
    rule: RewardRule | Mapping[str, Any] | None = None,
    api_key_env: str = "JUDGE_SERVE_API_KEY",
    model: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    retry: RetryPolicy | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
    max_judgments: int = DEFAULT_MAX_JUDGMENTS,
    max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
    name: str = "pollux_judge",
    end_token_ids: Sequence[int] | None = None,
    max_failed_calls: int = DEFAULT_MAX_FAILED_CALLS,
    max_queued_judgments: int = DEFAULT_MAX_QUEUED_JUDGMENTS,
) -> Callable[..., Any]:
    """An async trl reward function over judge-serve (the module docstring says what it reads and logs).

    Args:
        url: judge-serve's root URL.
        criteria: the criteria of every sample (a list, one criterion's name, or ``"auto"``: judge-serve's task
            classifier chooses each sample's); None: the dataset column ``criteria_column``.
        criteria_column, instruction_column, reference_column: dataset columns trl passes as keyword lists. A row's
            criteria as a ``/get_reward`` label's: a list (or a JSON string of one), ``"auto"``, or null where the
            row's ``task_type`` names the task whose criteria set to use; ``criteria_column=None``: no such column,
            every row on its task's set. A column named here that trl does not pass is a ``ValueError`` naming it and
            the columns trl passed, at the call.
        rule: the reward rule, a ``RewardRule`` or a mapping of its fields (``{"gate": True}``, as verl's
            ``reward_kwargs`` give it), checked when the function is built (default: ``RewardRule()``: the mean, a
            failed verdict counts as its criterion's worst level, as on the OpenRLHF and verl paths;
            ``on_failure="skip"`` gives such a sample None instead).
        api_key_env, model, timeout_s, retry: as ``JudgeRewardClient``.
        max_items: most samples per ``/v1/judge`` request (judge-serve's ``max_batch_items``), 1 or more.
        max_judgments: most (sample, criterion) judgments per request (judge-serve's ``max_judgments_per_request``),
            1 or more.
        max_body_bytes: most bytes of one request's body (under judge-serve's ``max_body_bytes``; None: no bound).
            A sample whose own body is larger is not sent: its criteria fail, valued by the rule's ``on_failure``.
        name: the function's ``__name__``, which trl logs the reward under (``rewards/<name>/mean``).
        end_token_ids: the ids that end a completion, as trl's trainer counts them: its ``eos_token_ids`` (the
            tokenizer's ``eos_token_id`` and every id in the model's ``generation_config.eos_token_id``) and the
            tokenizer's ``pad_token_id``. A completion whose ``completion_ids`` end in none of them was cut by
            ``max_completion_length`` (``judge.rewards.cut_completions``): it is not sent, and each of its criteria fails
            (``cut``), valued by the rule's ``on_failure`` (``/v1/judge`` items carry no "cut" flag: judged, its
            cut text would be rated as a whole answer). None: cut completions cannot be told and are judged as
            they stand (a warning says so once, at the first call given ``completion_ids``).
        max_failed_calls: how many calls in a row in which every request sent failed after the retries stop
            training (``EndpointUnusable`` naming the URL), 1 or more (default ``DEFAULT_MAX_FAILED_CALLS``): a
            judge-serve that died after the first contact would otherwise give None at every step. A call with an
            answer between starts the count again; a request counts only where one was made, so a call that sent
            nothing (only empty, cut or oversize answers) leaves the count, as does an oversize answer beside
            failed requests.

    Raises:
        ValueError: a bound that is no bound (``timeout_s`` and ``max_body_bytes`` as ``JudgeRewardClient``; a
            ``max_items``, ``max_judgments`` or ``max_failed_calls`` that is no whole number of at least 1), naming
            it, when built.
    """
    import asyncio

    _check_count(max_items, "max_items", 1, "samples per request")
    _check_count(max_judgments, "max_judgments", 1, "(sample, criterion) judgments per request")
    _check_count(max_failed_calls, "max_failed_calls", 1, "calls in a row whose every request failed")
    _check_count(max_queued_judgments, "max_queued_judgments", 1, "judgments in flight")
    client = JudgeRewardClient(url, rule=rule, api_key_env=api_key_env, model=model, timeout_s=timeout_s, retry=retry,
                               max_body_bytes=max_body_bytes)
    fixed = _criteria(criteria, "criteria") if criteria is not None else None
    ends = _end_token_ids(end_token_ids)
    warned_blind = contacted = False
    watch = FailedVerdictsWatch()
    # calls in a row in which every request sent failed after the retries: one streak key per call, so it counts calls
    streak = FailingStreak(max_failed_calls)
    n_calls = 0

    async def reward(prompts, completions, completion_ids=None, log_extra=None, log_metric=None,
                     **columns) -> list[float | None]:
        nonlocal warned_blind, contacted, n_calls
        n_calls += 1
        _check_columns(columns, criteria_column if fixed is None else None, instruction_column, reference_column)
        _check_lengths(prompts, completions, columns,
                       (criteria_column if fixed is None else None, instruction_column, reference_column))
        if ends is None and completion_ids is not None and not warned_blind:
            warned_blind = True
            log.warning("%s: no end_token_ids given: a completion max_completion_length cut is judged as if it were "
                        "whole (pass the tokenizer's eos and pad ids and the model's generation_config eos ids)", name)
        cut = cut_completions(completion_ids, ends, len(completions))
        cut_rewards: dict[int, Reward] = {}
        samples = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            if instruction_column:
                instruction = _text_or_none(columns[instruction_column][i], f"{instruction_column}[{i}]")
                if instruction is None or is_blank(instruction):
                    raise ValueError(f"{instruction_column}[{i}]: no instruction (null or empty)")
            else:
                try:
                    instruction = _instruction(prompt)
                    # an image alone, or text that shows nothing, in any prompt shape: the judge would rate the
                    # answer against nothing (and judge-serve refuses a blank instruction, failing the whole batch)
                    if is_blank(instruction):
                        raise ValueError("the last user turn has no text to judge the answer against")
                except ValueError as err:
                    raise ValueError(f"prompts[{i}]: {err}") from None
            reference = _text_or_none(columns[reference_column][i], f"{reference_column}[{i}]") if reference_column \
                else None
            task = _task({name: columns[name][i] for name in TASK_FIELDS if name in columns},
                         lambda name: f"{name}[{i}]")
            if fixed is not None:
                crit = fixed
            else:
                value = columns[criteria_column][i] if criteria_column else None
                where = (f"{criteria_column}[{i}]" if criteria_column
                         else f"samples[{i}].criteria (criteria_column=None)")
                crit = _criteria(value, where, task_named=_names_task(task))
            _refuse_repeated(crit, task, where if fixed is None else "criteria")
            # A text prompt shows whether its template opened a <think>; a conversational one shows no template
            # (None: policy_answer reads a </think> with no <think> before it as closing one).
            opened = prompt_opens_reasoning(prompt) if isinstance(prompt, str) else None
            if cut[i]:
                # Left unsent (no answer: judge_request_body sends none), so every row keeps its batch index for a
                # refusal's samples[i]; its value is set below, whatever becomes of the requests.
                samples.append(RewardSample(instruction, "", crit, reference, task))
                cut_rewards[i] = _unsent_reward(samples[-1], client.rule, CUT_REASON, i, VerdictError.CUT)
                continue
            try:
                text = completion_text(completion)
            except ValueError as err:
                raise ValueError(f"completions[{i}]: {err}") from None
            samples.append(RewardSample(instruction, policy_answer(text, opened), crit, reference, task))
        if not contacted:
            # The rewards below take a failed request for a transient one (None, trained on as NaN): a wrong or dead
            # URL would give no reward at every step and never stop the run. Checked once, before the first request,
            # and after the rows: a bad row is the data's to fix whether or not judge-serve is up.
            await asyncio.to_thread(client.first_contact)
            contacted = True
        chunks = request_chunks(samples, max_items, max_judgments, max_body_bytes, model)
        firsts = [sum(map(len, chunks[:k])) for k in range(len(chunks))]  # each chunk's first row in the batch
        started = time.monotonic()
        outcomes = await _within_judgments(
            [(sum(_judgments_of(s) for s in chunk if s.answer), lambda chunk=chunk, first=first:
              client._arewards_requested(chunk, first)) for chunk, first in zip(chunks, firsts)],
            max_queued_judgments)
        latency = time.monotonic() - started
        # A failure is a request that failed (a transient one; any other is raised below). A chunk that made no
        # request (an oversize answer, valued without judge-serve) says nothing of whether judge-serve answers.
        answers = [o if isinstance(o, BaseException) else o[1] for o in outcomes]
        requested = [isinstance(o, BaseException) or o[0] for o in outcomes]
        # A refusal (a bad row, a wrong key) would come back every step: raised, not turned into missing rewards.
        lasting = next((a for a in answers if isinstance(a, BaseException) and not is_transient(a)), None)
        if lasting is not None:
            raise lasting
        values: list[float | None] = []
        rationales: list[str] = []
        failed_requests = failures = refused = 0
        judged: list[Reward | None] = []  # every judged sample's reward, for the per-criterion counts
        for chunk, answer in zip(chunks, answers):
            if isinstance(answer, BaseException):  # transient, and still failing after the retries
                log.warning("judge-serve at %s gave no rewards for %d samples: %s: %s", client.url,
                            sum(bool(s.answer) for s in chunk), type(answer).__name__, visible(answer))
                failed_requests += 1
                # A sample with nothing to judge was never sent: its value is the rule's, whatever the judge does.
                values += [None if s.answer else client.rule.empty_answer for s in chunk]
                rationales += [f"(no judgment: {type(answer).__name__})" if s.answer else "(empty answer)" for s in chunk]
                continue
            failing = watch.add(answer)
            if failing:
                log.warning("%s: %s", name, failing)
            judged += answer
            for r in answer:
                values.append(_value(r, client.rule))  # None only where the rule skips
                failures += r.failed if r is not None else 0
                refused += engine_refusals(r)
                rationales.append(" | ".join(_verdict_text(c) for c in r.criteria) if r is not None else "(empty answer)")
        sent = [answer for answer, made in zip(answers, requested) if made]
        if sent:  # a call that made no request leaves the count, and cannot stop the run by itself
            streak.offer(sent[-1] if all(isinstance(a, BaseException) for a in sent) else None, key=n_calls)
            if streak.stopped is not None:
                # taken, so that a later call stops again only by failing too, as the streak's first stop did
                last, streak.stopped = streak.stopped, None
                raise _judge_gone(client.url, max_failed_calls, last)
        for i, r in cut_rewards.items():
            values[i] = _value(r, client.rule)
            # the why once per row, in parentheses as the other rows never judged: each `failed (cut)` alone does not say it
            rationales[i] = f"({CUT_REASON}) " + " | ".join(_verdict_text(c) for c in r.criteria)
        # counted as /get_reward's judge_empty_answer and judge_gate_closed count them: a policy that leaves its
        # <think> open is rewarded empty_answer, and only this count says why
        empty = sum(not s.answer for i, s in enumerate(samples) if i not in cut_rewards)
        gate_closed = sum(bool(r is not None and r.gate_closed) for r in (*judged, *cut_rewards.values()))
        missing = sum(value is None for value in values)
        if missing:
            # trl makes None a NaN: this function's mean leaves the sample out, but beside another reward function
            # the weighted nansum of its default sum_then_normalize counts this one as 0 for it
            # (trl/trainer/grpo_trainer.py, _generate_and_score_completions): silent unless said here.
            log.warning("%s: %d of %d samples got no judge reward (None; %d failed requests): beside another reward "
                        "function trl's default sum counts this one as 0 for them", name, missing, len(values),
                        failed_requests)
        if log_extra is not None:
            log_extra(f"{name}_verdicts", rationales)
        if log_metric is not None:
            log_metric(f"{name}/judge_failures", float(failures))
            # of them, per criterion the call judged, 0 included: a step that judged a criterion is a point on its
            # curve even without a failure; a criterion this call did not judge (not asked of its rows, or its
            # requests failed) has no point, where a 0 would say its verdicts were all read
            for criterion, n_failed in failures_by_metric_key(judged).items():
                log_metric(f"{name}/judge_failures/{criterion}", float(n_failed))
            log_metric(f"{name}/judge_engine_refused", float(refused))  # of judge_failures
            log_metric(f"{name}/failed_requests", float(failed_requests))
            log_metric(f"{name}/latency_s", latency)
            log_metric(f"{name}/cut_completions", float(len(cut_rewards)))
            log_metric(f"{name}/empty_answers", float(empty))
            log_metric(f"{name}/gate_closed", float(gate_closed))
        return values

    reward.__name__ = reward.__qualname__ = name
    return reward


# ---------------------------------------------------------------------------------------------------------------
# verl
# ---------------------------------------------------------------------------------------------------------------


def _label(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        parsed = json_or_none(value)
        return parsed if isinstance(parsed, dict) else None
    return None


def sample_from_verl(solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None) -> RewardSample:
    """The sample verl's ``compute_score`` arguments describe (the module docstring's rule).

    Raises:
        ValueError: no instruction in either place, or no criteria (a list or ``"auto"``) and no ``task_type``.
    """
    # verl reads extra_info from parquet, whose struct gives every row every key: a key a row lacks holds None,
    # which must leave the label's value (and a plain ground truth's reference answer) in place.
    given = {k: v for k, v in (extra_info or {}).items()
             if k in ("instruction", "criteria", "reference_answer", *TASK_FIELDS) and v is not None}
    label = _label(ground_truth)
    if label is None and isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        # meant as a JSON label: taken for a reference answer, its instruction and criteria would be lost silently
        try:
            json.loads(ground_truth)
        except JSON_REFUSALS as err:
            raise ValueError(f"verl sample: ground_truth: opens with '{{' but is {unreadable_json(err, whole_file=True)};"
                             " a reference answer that opens so goes in extra_info['reference_answer']") from None
    source = {**{k: v for k, v in (label or {}).items() if v is not None}, **given}
    if label is None and isinstance(ground_truth, str) and ground_truth.strip() and "reference_answer" not in source:
        source["reference_answer"] = ground_truth
    if label is None and not isinstance(ground_truth, str) and "reference_answer" not in source:
        # No label and no text (a parquet column of numbers) where the reference answer is read from it: refused as
        # a number in extra_info['reference_answer'] is; dropped, every answer would be judged against no reference.
        try:
            _text_or_none(ground_truth, "verl sample: ground_truth (a label, or the reference answer's text)")
        except ValueError as err:  # a class index for another scorer (verl's hellaswag example): the way past named
            raise ValueError(f"{err}; a ground_truth meant for another reward function is left alone where "
                             "extra_info['reference_answer'] gives the reference (\"\" for none)") from None
    instruction = _text_or_none(source.get("instruction"),
                                "verl sample: instruction (extra_info['instruction'] or the ground_truth label)")
    if instruction is None or is_blank(instruction):
        raise ValueError("verl sample: no instruction in extra_info['instruction'] or the ground_truth label")
    task = _task(source, lambda name: f"verl sample: {name} (extra_info['{name}'] or the ground_truth label)")
    where = "verl sample: criteria (extra_info['criteria'] or the ground_truth label)"
    crit = _criteria(source.get("criteria"), where, task_named=_names_task(task))
    _refuse_repeated(crit, task, where)
    reference = _text_or_none(source.get("reference_answer"),
                              "verl sample: reference_answer (extra_info['reference_answer'] or the ground_truth label)")
    return RewardSample(instruction, policy_answer(solution_str), crit, reference, task)


#: The keyword arguments verl's reward managers pass a custom reward function beside ``reward_kwargs``
#: (``extra_reward_kwargs`` in ``verl/experimental/reward_loop/reward_manager/naive.py``, ``dapo.py``,
#: ``limited.py``): accepted and ignored. Any other key is a ``reward_kwargs`` key neither function takes.
VERL_EXTRA_KWARGS = ("reward_router_address", "reward_model_tokenizer")


def _check_verl_kwargs(function: str, extra: Mapping[str, Any], *, concurrency: bool = False) -> None:
    """Refuse a ``reward_kwargs`` key ``function`` does not take (a misspelt ``rules:`` would otherwise train on the
    default rule, silently).

    Raises:
        TypeError: naming the keys and the ones the function takes.
    """
    unknown = sorted(set(extra) - set(VERL_EXTRA_KWARGS))
    if unknown:
        taken = ["judge_url", "rule", "model", "api_key_env", "timeout_s", "max_retries", "retry_wait_budget_s",
                 *(["max_concurrent_requests"] if concurrency else []), "max_body_bytes"]
        raise TypeError(f"{function}: unknown custom_reward_function.reward_kwargs key(s) {unknown}; it takes "
                        f"{', '.join(taken)} (verl itself passes {' and '.join(VERL_EXTRA_KWARGS)})")


def _verl_client(judge_url: str, rule: Mapping[str, Any] | RewardRule | None, api_key_env: str, timeout_s: float,
                 max_retries: int, max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
                 model: str | None = None, retry_wait_budget_s: float = DEFAULT_WAIT_BUDGET_S) -> JudgeRewardClient:
    rule = _rule(rule)
    rule.require_numeric("custom_reward_function.reward_kwargs.rule")
    _check_bounds(timeout_s, max_body_bytes, "custom_reward_function.reward_kwargs.")
    _check_count(max_retries, "custom_reward_function.reward_kwargs.max_retries", 0,
                 "retries after a request's first attempt")
    if isinstance(retry_wait_budget_s, bool) or not isinstance(retry_wait_budget_s, (int, float)) \
            or not 0 <= retry_wait_budget_s < float("inf"):  # NaN fails both bounds
        raise ValueError(f"custom_reward_function.reward_kwargs.retry_wait_budget_s: must be a finite number of "
                         f"seconds, 0 or more (one request's waits between retries, all together), got "
                         f"{retry_wait_budget_s!r}")
    return JudgeRewardClient(judge_url, rule=rule, api_key_env=api_key_env, model=model, timeout_s=timeout_s,
                             retry=RetryPolicy(max_retries=max_retries, backoff_s=1.0, max_backoff_s=30.0,
                                               wait_budget_s=float(retry_wait_budget_s),
                                               bound_flag="retry_wait_budget_s"),
                             max_body_bytes=max_body_bytes)


#: verl calls its reward function once per sample, each call with a client of its own: the process's failures are
#: watched across them, by windows only (one sample's failure is no request failing whole).
_VERL_FAILURES = FailedVerdictsWatch(whole_request=False)


def _verl_result(reward: Reward | None, rule: RewardRule) -> dict[str, Any]:
    failing = _VERL_FAILURES.add([reward])
    if failing:
        log.warning("verl reward: %s", failing)
    return {
        "score": float(_value(reward, rule)),  # type: ignore[arg-type]
        "judge_failures": reward.failed if reward is not None else 0,
        "judge_engine_refused": engine_refusals(reward),  # of judge_failures
        "judge_gate_closed": int(bool(reward is not None and reward.gate_closed)),
        "judge_empty_answer": int(reward is None),
    }


def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None,
                  *, judge_url: str, rule: Mapping[str, Any] | None = None, model: str | None = None,
                  api_key_env: str = "JUDGE_SERVE_API_KEY", timeout_s: float = DEFAULT_TIMEOUT_S,
                  max_retries: int = 4, max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
                  retry_wait_budget_s: float = DEFAULT_WAIT_BUDGET_S, **verl_extra: Any) -> dict[str, Any]:
    """verl's custom reward function, synchronous: one judged sample, ``{"score", judge_failures,
    judge_engine_refused, judge_gate_closed, judge_empty_answer}``, every key a number for every sample.

    ``judge_url`` and the rest come from ``custom_reward_function.reward_kwargs`` (``model``, ``timeout_s`` and the
    rule as ``trl_reward_function`` takes them; ``retry_wait_budget_s`` bounds one request's waits between its
    retries, all together, ``judge.plumbing.retry.RetryPolicy.wait_budget_s``); the keyword arguments verl passes
    itself (``VERL_EXTRA_KWARGS``) are ignored. A sample whose body is over ``max_body_bytes`` is not sent: its
    criteria fail, valued by the rule (``zero`` by default).

    Raises:
        TypeError: a ``reward_kwargs`` key this function does not take (``rules``, ``timeout``), naming it.
        ValueError: no instruction or criteria for the sample, or a skipping rule; a ``timeout_s`` or
            ``max_body_bytes`` that is no bound (``JudgeRewardClient``), or a ``max_retries`` that is no whole number
            of 0 or more, naming the ``reward_kwargs`` key; a sample too large to send with a task or criterion
            judge-serve would refuse.
        RewardRequestRefused: judge-serve refused the sample (its message, naming the field), not retried.
        httpx.HTTPError: judge-serve did not answer after the retries.
    """
    _check_verl_kwargs("compute_score", verl_extra)
    client = _verl_client(judge_url, rule, api_key_env, timeout_s, max_retries, max_body_bytes, model,
                          retry_wait_budget_s)
    return _verl_result(client.rewards([sample_from_verl(solution_str, ground_truth, extra_info)])[0], client.rule)


async def compute_score_async(data_source: Any, solution_str: str, ground_truth: Any,
                              extra_info: Mapping[str, Any] | None = None, *, judge_url: str,
                              rule: Mapping[str, Any] | None = None, model: str | None = None,
                              api_key_env: str = "JUDGE_SERVE_API_KEY", timeout_s: float = DEFAULT_TIMEOUT_S,
                              max_retries: int = 4, max_concurrent_requests: int = DEFAULT_VERL_CONCURRENCY,
                              max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
                              retry_wait_budget_s: float = DEFAULT_WAIT_BUDGET_S,
                              **verl_extra: Any) -> dict[str, Any]:
    """verl's custom reward function, awaited by its reward loop (``inspect.iscoroutinefunction``); as
    ``compute_score``. verl starts one per sample at once: at most ``max_concurrent_requests`` requests are in
    flight per event loop.

    Raises:
        ValueError: ``max_concurrent_requests`` under 1 (no request could ever start), and as ``compute_score``.
    """
    _check_verl_kwargs("compute_score_async", verl_extra, concurrency=True)
    _check_count(max_concurrent_requests, "custom_reward_function.reward_kwargs.max_concurrent_requests", 1,
                 "requests in flight per event loop")
    client = _verl_client(judge_url, rule, api_key_env, timeout_s, max_retries, max_body_bytes, model,
                          retry_wait_budget_s)
    sample = sample_from_verl(solution_str, ground_truth, extra_info)
    async with _verl_slots(max_concurrent_requests):
        rewards = await client.arewards([sample])
    return _verl_result(rewards[0], client.rule)


#: Per running event loop (held weakly: a closed loop's table goes with it), limit -> its semaphore.
_VERL_SLOTS: "weakref.WeakKeyDictionary[Any, dict[int, Any]]" = weakref.WeakKeyDictionary()


def _verl_slots(limit: int):
    """The running event loop's semaphore of ``limit`` slots (verl may run several loops, one per worker)."""
    import asyncio

    by_limit = _VERL_SLOTS.setdefault(asyncio.get_running_loop(), {})
    if limit not in by_limit:
        by_limit[limit] = asyncio.Semaphore(limit)
    return by_limit[limit]
