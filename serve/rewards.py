"""``POST /get_reward``: judge-serve as OpenRLHF's remote reward model, in its protocol exactly.

OpenRLHF's client (``openrlhf/utils/agent.py``, ``_fetch_rewards_via_http``; the reference server is
``openrlhf/cli/serve_rm.py``) POSTs, with no headers of its own::

    {"query":   [prompt + response, decoded with the special tokens kept],
     "prompts": [the prompt, as the dataset rendered it],
     "labels":  [the dataset's label column]}

and reads ``{"rewards": [...], "scores": [...], "extra_logs": {name: [numbers]}}``, one entry per sample.

**The label** is a JSON object (or a string holding one) with the ``/v1/judge`` item fields but the answer:
``instruction``, ``criteria`` (taxonomy names or ids, or ``{"name", "rubrics"}`` objects; POLLUX-instructions rows'
``{"criteria_name", "rubrics"}`` are read the same, both names at once refused; a list, a JSON string of one, or one
criterion's name, read by the trl and verl clients' ``judge.reward_clients.label_criteria``), optionally
``reference_answer`` and ``task_type``/``task_subtype``/``task_subsubtype``. Its errors name ``labels[i]``. Every
label is checked in full (its fields, criteria names, task and rubric scales) before any work, whether or not its
sample has an answer to judge: one label gets one answer.

**The answer** (``answer_of``): the query minus its prompt, or minus the tail of it that OpenRLHF kept when it cut a
long prompt from the left, compared in NFC when the tokenizer gave the prompt back composed, and on the
characters other than whitespace when it gave the prompt back spaced otherwise (``clean_up_tokenization_spaces``, a
SentencePiece decoder's space after ``<s>``): the whole prompt, and last a tail of it; a query that starts with none
of these is refused naming ``query[i]``.
Then ``judge.rewards.policy_answer``'s rule: cut where the turn ends (an end-of-turn token, ``END_OF_TURN_MARKERS``,
followed only by padding, more markers or the next turn: a ``</s>`` or ``<eos>`` with the answer's text after it is
that text), and after the ``</think>`` closing a reasoning block that the prompt's end or the output's start opened
(Qwen3's reasoning is not the answer the judge rates); such a block never closed leaves nothing to judge. An empty
answer gets the rule's ``empty_answer``, unjudged.

**The work**: every sample with an answer becomes one ``/v1/judge`` item, and the whole request is one
``Judge.run`` (the same batching, prefix order and prompt caching as ``/v1/judge``); each sample's results become
its reward by ``judge.rewards.reward_of`` under the server's ``reward_rule``. A judgment whose prompt cannot fit
the judge's context is a failed criterion (``context_length_exceeded``, ``"oversize": "fail"``), valued by the
rule's ``on_failure`` and counted in ``judge_failures``, not a refusal of the request; so is a judgment the engine
refused alone (``engine_refused``: a 4xx but 401, 403, 404 and the retryable 408, 409, 429,
``serve.errors.engine_refused``), counted in ``judge_engine_refused`` too.

**One deadline** (``reward_deadline_s``, ``serve.config.REWARD_DEADLINE_S`` by default; ``request_timeout_s`` when
shorter): the body, the wait for an engine (``reward_engine_wait_s``), the wait for room under
``max_queued_judgments`` (``serve.queued``: first come, first admitted; a 503 ``queue_full`` once
``admission_margin_s`` is all that is left of the deadline, or at once when judge-serve drains, where ``/v1/judge``
answers it at once) and the judging together, answered 504 past it.
OpenRLHF's client gives up after 180 s and sends the request again (``openrlhf/utils/agent.py``): a judgment still
running then would be judged twice over. Past the deadline, or as soon as the client disconnects, the judging is
cancelled, as ``/v1/judge``'s is past its ``request_timeout_s``: its engine requests are cancelled with it.

**What goes back**: ``rewards`` and ``scores`` (the same numbers; OpenRLHF filters on ``scores``); ``extra_logs``:
the keys of ``EXTRA_LOG_KEYS`` for every sample, ``judge_failures`` (criteria whose verdict failed),
``judge_engine_refused`` (of those, the judgments the engine refused: a 4xx for that judgment alone),
``judge_latency_s`` (the request's judging time), ``judge_gate_closed`` and ``judge_empty_answer`` (0/1). The same
keys on every sample of every request: OpenRLHF asks for one sample per request, joins each key's values over the
batch and refuses a key with fewer values than samples (``openrlhf/trainer/ppo_utils/experience.py``,
``concat_experiences`` then ``split_experience_batch``), so a per-criterion key that only the samples scoring that
criterion carried would fail its training step. Each criterion's value, score, failure and rationale go to
``rewards.jsonl`` in judge-serve's log folder instead, one row per sample with the request id (``X-Request-Id``).

**Who may call it** (OpenRLHF sends no ``Authorization``): ``POST /get_reward/<reward key>``, the key read from
``$JUDGE_SERVE_REWARD_KEY`` (``reward_key_env``) and given to OpenRLHF inside ``--reward.remote_url``; without that
variable the secret route refuses everything. ``POST /get_reward`` (no key in the path) takes judge-serve's own
``Authorization: Bearer`` key, and is open only when judge-serve has no key at all, neither its own nor a reward
key (then the Host allow-list applies, as to every route): with ``$JUDGE_SERVE_REWARD_KEY`` set and no ``api_key``,
the plain route is refused (401, naming ``/get_reward/<reward key>``). The key in the path is compared in constant time and replaced by ``<reward-key>`` in
uvicorn's access log. A refusal (a 400 naming its field; a 401, at most one line a minute) is logged as a warning
too: OpenRLHF never reads the body of an answer it cannot use.

Why one module of ~810 lines: it is one protocol's route, OpenRLHF's, from the body to the answer; the pieces
(the answer in the query, the labels, the key, the deadline, the journal) each serve only it, and apart a reader of
one refusal would follow the body through several files.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
import re
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from judge.plumbing.console_logging import visible
from judge.plumbing.journal import JournalWriter
from judge.plumbing.provenance import scrub_secrets
from judge.criteria import repeated_criterion
from judge.reward_clients import label_criteria
from judge.rewards import (END_OF_TURN_MARKERS, FailedVerdictsWatch, Reward, RewardRule, engine_refusals,
                           policy_answer, prompt_opens_reasoning, reward_of)
from judge.verdicts import VerdictError
from judge.wire import JudgeResponse, JudgeResult, too_many_fields
from serve.config import ServeConfig
from serve.connections import bearer_matches, unless_disconnected
from serve.engine_client import EngineFailure, EngineUnavailable
from serve.errors import judgment_failed
from serve.jobs import check_criteria
from serve.queued import QueueFull
from serve.quiet_logs import SpacedWarning
from serve.schema import (MAX_OBJECT_KEYS, MESSAGE_MAX_CHARS, JudgeRequest, RequestError, check_bounds, clip_message,
                          decode_json_body, parse_judge_request, read_off_loop, task_level_named)

__all__ = ["END_OF_TURN_MARKERS", "LABEL_FIELDS", "answer_of", "reward_rule_of", "reward_key_of", "RewardRoute",
           "install_reward_routes", "REWARD_JOURNAL", "JOURNAL_ANSWER_CHARS", "checked_label_criteria",
           "label_problems", "refuse_repeated_criteria", "SecretPathFilter", "admission_margin_s"]

log = logging.getLogger("judge_serve")

#: The label's keys: a ``/v1/judge`` item's fields without the answer, which the query gives.
LABEL_FIELDS = ("id", "instruction", "criteria", "reference_answer", "task_type", "task_subtype", "task_subsubtype")
#: The rewards journal, in judge-serve's log folder.
REWARD_JOURNAL = "rewards.jsonl"


#: The shortest tail of a prompt read as the start of a query whose prompt OpenRLHF cut from the left.
MIN_PROMPT_TAIL = 16
#: Places in the prompt where the query's first characters occur, tried at C speed before the linear search
#: (``_longest_tail``): natural text finds its cut at the first; a repetitive prompt goes on to the search.
FAST_TAIL_STARTS = 16
#: The longest prompt tail the linear search (pure Python, near a second a million characters) looks for: 262,144
#: characters, some 65,000 tokens of a prompt OpenRLHF cut. A query whose first MAX_TAIL_SEARCH + 1 characters
#: occur in its prompt (one search at C speed) could hold a longer tail and is refused rather than searched for
#: seconds; only a repetitive prompt gets that far, past ``FAST_TAIL_STARTS`` tries.
MAX_TAIL_SEARCH = 1 << 18


def _longest_tail(prompt: str, body: str) -> int:
    """The longest L with ``prompt[-L:] == body[:L]``, in time linear in their lengths: Knuth–Morris–Pratt, the
    pattern being ``body``'s first ``len(prompt)`` characters and the text ``prompt`` (what the pattern matches when
    the text ends is the longest prefix of the body that ends the prompt). ~50 ms for a 180,000-character prompt."""
    pattern = body[:len(prompt)]
    m = len(pattern)
    if not m:
        return 0
    fail = [0] * m
    k = 0
    for i in range(1, m):
        while k and pattern[k] != pattern[i]:
            k = fail[k - 1]
        if pattern[k] == pattern[i]:
            k += 1
        fail[i] = k
    k = 0
    for c in prompt:
        while k and (k == m or pattern[k] != c):
            k = fail[k - 1]
        if k < m and pattern[k] == c:
            k += 1
    return k


def answer_of(query: str, prompt: str) -> str | None:
    """The policy's answer in an OpenRLHF query (the module docstring's rule).

    The query is the prompt's tokens and the response's, decoded. A prompt longer than OpenRLHF's ``max_len`` minus
    ``max_tokens`` is cut from the left first (``prompt_token_ids[-max_prompt_length:]`` in ``openrlhf/utils/
    agent.py``, which still sends the whole prompt): the query then starts with a tail of the prompt, after a
    replacement character or two where the cut split a multi-byte character. The answer follows the longest tail
    of the prompt (at least ``MIN_PROMPT_TAIL`` characters) that the query starts with.

    A tokenizer that normalises its input (Qwen's: NFC) gives back a prompt written in another form (an "й" as
    "и" and a combining breve) in its composed form: each comparison below that fails as sent is tried again with
    both in NFC (``_nfc_response``) before the next comparison.

    A tokenizer may also give the prompt back spaced otherwise: ``clean_up_tokenization_spaces`` drops the space
    before ``. , ? ! '`` ("там ?" comes back "там?"), a SentencePiece decoder adds one after a special token
    ("<s>[INST]" comes back "<s> [INST]"). So the comparisons go: the whole prompt (as sent, then NFC); the whole
    prompt on the characters other than whitespace (``_spaced_response``); the longest tail; last, a prompt both
    cut and spaced otherwise, the longest tail compared on those characters (``_spaced_tail_response``). The whole
    prompt in every form comes before any tail of it.

    Returns:
        The answer ("" when there is nothing to judge), or None when ``query`` starts with neither ``prompt`` nor
        a tail of it, as sent or in NFC, nor with the characters of either spaced otherwise.
    """
    response = None
    # The whole prompt before any tail of it (a prompt whose start comes back at its end would otherwise match as a
    # tail of itself, its middle taken for the answer); exact before spacing-blind
    for match in (_whole_response, _spaced_response, _tail_response, _spaced_tail_response):
        response = match(query, prompt)
        if response is None:
            response = _nfc_response(query, prompt, match)
        if response is not None:
            break
    if response is None:
        return None
    return policy_answer(response, prompt_opens_reasoning(prompt))  # a thinking template's prompt ends in "<think>\n"


def _whole_response(query: str, prompt: str) -> str | None:
    """What follows ``prompt`` at the start of ``query``; None when the query does not start with it."""
    return query[len(prompt):] if query.startswith(prompt) else None


def _tail_response(query: str, prompt: str) -> str | None:
    """What follows the longest tail of ``prompt`` at the start of ``query`` (a suffix of ``query``); None when the
    query starts with none (a prompt OpenRLHF cut from the left)."""
    if query.startswith(prompt):
        return query[len(prompt):]
    body = query.lstrip("\ufffd")
    anchor = body[:MIN_PROMPT_TAIL]
    if len(anchor) < MIN_PROMPT_TAIL:
        return None
    start = prompt.find(anchor)
    for _ in range(FAST_TAIL_STARTS):
        if start < 0:
            return None  # the query's start is nowhere in the prompt
        if body.startswith(prompt[start:]):  # the earliest start that fits: the longest tail
            return body[len(prompt) - start:]
        start = prompt.find(anchor, start + 1)
    # A tail of L characters is the body's first L characters found in the prompt: where the body's first
    # MAX_TAIL_SEARCH + 1 are nowhere in it, every tail fits in the prompt's last MAX_TAIL_SEARCH, and searching
    # only those finds the same longest one.
    if min(len(prompt), len(body)) > MAX_TAIL_SEARCH and body[:MAX_TAIL_SEARCH + 1] in prompt:
        return None
    kept = _longest_tail(prompt[-MAX_TAIL_SEARCH:], body)
    return body[kept:] if kept >= MIN_PROMPT_TAIL else None


#: Characters of the query and the prompt compared first by ``_spaced_response``, before the whole prompt is walked.
_SPACED_HEAD = 1024


def _bare(text: str) -> str:
    """``text`` without its whitespace (``str.isspace``'s characters, which ``str.split`` cuts on), at C speed:
    several times faster than a regular expression's substitution on a long text."""
    return "".join(text.split())


def _after_bare(query: str, count: int) -> int | None:
    """Where ``query``'s first ``count`` characters other than whitespace end (the whitespace before each
    skipped); None when it has fewer. One possessive pass: each step's whitespace and character cannot overlap, so
    nothing backtracks."""
    end = re.match(r"(?:\s*+\S){%d}" % count, query)
    return end.end() if end is not None else None


def _spaced_response(query: str, prompt: str) -> str | None:
    """What follows ``prompt`` at the start of ``query`` when the two are compared on their characters other than
    whitespace, which either may have more or fewer of (a suffix of ``query``); None when the query's first
    non-whitespace characters are not the prompt's. Linear: one possessive regular-expression pass over the
    query's start finds where the prompt's last non-whitespace character falls, one comparison checks it; no
    backtracking, since each step's whitespace and character cannot overlap."""
    heads = _bare(query[:_SPACED_HEAD]), _bare(prompt[:_SPACED_HEAD])
    shorter = min(map(len, heads))
    if heads[0][:shorter] != heads[1][:shorter]:
        return None  # the usual refusal (another prompt) decided on the first characters, not the whole prompt
    bare = _bare(prompt)
    if not bare:
        return None  # nothing to align on: only the exact match can place a whitespace prompt
    if not _bare(query).startswith(bare):
        return None  # refused at C speed; only a query that matches pays the character-by-character pass below
    end = _after_bare(query, len(bare))
    if end is None or _bare(query[:end]) != bare:
        return None
    return query[end:]


def _spaced_tail_response(query: str, prompt: str) -> str | None:
    """What follows the longest tail of ``prompt`` at the start of ``query`` when both are compared on their
    characters other than whitespace (a suffix of ``query``): a prompt OpenRLHF cut from the left whose decoding also
    dropped or added spaces. ``_tail_response`` on the two texts without whitespace, so with its bounds (at least
    ``MIN_PROMPT_TAIL`` characters in common, a linear search over at most ``MAX_TAIL_SEARCH`` of them), then the
    tail's length carried back to the query by ``_after_bare``; None when the query starts with no such tail."""
    bare_query = _bare(query)
    rest = _tail_response(bare_query, _bare(prompt))
    if rest is None:
        return None
    kept = len(bare_query) - len(rest)  # the replacement characters and the tail, whitespace aside
    if not kept:
        return None  # an empty prompt: nothing to align on
    end = _after_bare(query, kept)
    return query[end:] if end is not None else None


def _nfc_response(query: str, prompt: str,
                  match: Callable[[str, str], str | None] = _tail_response) -> str | None:
    """``match`` (``_whole_response``, ``_spaced_response``, ``_tail_response`` or ``_spaced_tail_response``) with
    the query and the prompt both in NFC, given back as
    the query's own characters where they are the same text (only the prompt's form differed: the usual case, the
    policy's output decoded as it was sampled), else in NFC; None when they do not match in NFC either."""
    nfc_query, nfc_prompt = unicodedata.normalize("NFC", query), unicodedata.normalize("NFC", prompt)
    if (nfc_query, nfc_prompt) == (query, prompt):
        return None  # already NFC: the match already failed
    response = match(nfc_query, nfc_prompt)
    if not response:
        return response
    own = query[len(query) - len(response):]  # the response is a suffix of the query in NFC: the same in the query?
    return own if unicodedata.normalize("NFC", own) == response else response


def reward_rule_of(config: ServeConfig) -> RewardRule:
    """The server's rule: ``RewardRule``'s defaults (a failed verdict counts 0) updated by ``reward_rule``.

    Raises:
        judge.rewards.RewardRuleError: naming the field.
    """
    return RewardRule.from_dict(config.reward_rule or {}, where="reward_rule")


def reward_key_of(config: ServeConfig) -> str:
    """The reward key from the variable ``reward_key_env`` names ("" when unset: the secret route refuses all),
    registered as a secret so that no run file holds it."""
    import os

    from urllib.parse import quote

    from judge.plumbing.provenance import register_secret

    key = os.environ.get(config.reward_key_env, "") if config.reward_key_env else ""
    if key:
        register_secret(key)
        register_secret(quote(key, safe=""))  # as a request's path spells it, which uvicorn's access log writes
    return key


#: The characters of a judged answer the rewards journal keeps (``answer_chars`` gives its whole length).
JOURNAL_ANSWER_CHARS = 2000


class SecretPathFilter(logging.Filter):
    """Replaces the key in ``/get_reward/<key>`` by ``<reward-key>`` in the records of the logger it is added to, and
    the secrets this process registered (the reward key, as read and as a path writes it) wherever else they appear:
    a mistyped route (``/get_rewards/<key>``) is answered 404 by the router, never reaching the reward route, and
    uvicorn's access line still names its path."""

    _SECRET = re.compile(r"(/get_reward/)[^\s?]+")

    def _masked(self, text: str) -> str:
        return scrub_secrets(self._SECRET.sub(r"\1<reward-key>", text))

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self._masked(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = self._masked(record.msg)
        return True


def _install_secret_path_filters() -> None:
    """On uvicorn's access log, and on judge-serve's own logger, whose lines name a request's path too (a client
    that left, an unexpected error): a trainer that disconnects must not write the key into judge-serve's log."""
    for logger in (logging.getLogger("uvicorn.access"), log):
        if not any(isinstance(f, SecretPathFilter) for f in logger.filters):
            logger.addFilter(SecretPathFilter())


def refuse_repeated_criteria(criteria: Sequence[Any] | None, index: int) -> None:
    """A label naming one criterion twice (``"Креативность"`` and ``"creativity"``, one taxonomy id; or one custom
    name and rubric) would have it judged twice and weigh twice in the reward, silently
    (``judge.criteria.repeated_criterion``, the rule of every reward path).

    Raises:
        RequestError: naming the second mention (``items[index].criteria[k]``, which the route names ``labels[i]``).
    """
    repeat = repeated_criterion(criteria)
    if repeat is not None:
        first, k = repeat
        field = f"items[{index}].criteria[{k}]"
        raise RequestError(f"{field}: names the criterion of criteria[{first}] ({criteria[k].name}) again: it would be "
                           "judged twice and weigh twice in the reward", param=field)


def checked_label_criteria(request: JudgeRequest, config: ServeConfig) -> list:
    """The criteria of every label's item resolved as the judging resolves them (``serve.jobs.check_criteria``, with
    this server's task classifier for ``"auto"``), a criterion named twice refused (``refuse_repeated_criteria``):
    the route's check and ``label_problems``'.

    Raises:
        RequestError: naming ``items[i]``, the label of sample i.
    """
    resolved = check_criteria(request, classifying=bool(config.criteria_classifier))
    for i, criteria in enumerate(resolved):
        refuse_repeated_criteria(criteria, i)
    return resolved


def label_problems(rows: Iterable[tuple[str, Any]], config: ServeConfig) -> Iterator[str]:
    """Each label of a prompt dataset checked as ``/get_reward`` checks it (``_read``): its fields, criteria, task,
    rubric scales, repeated criteria and the judgments it asks for, against this server's settings (its task
    classifier for ``"auto"``, ``max_judgments_per_request``), with no engine: ``judge-serve --check-labels``. A bad
    label is otherwise found when training first draws its row, which OpenRLHF answers by failing the step.

    Args:
        rows: (where, label) pairs, ``where`` naming the row (``data.jsonl:7: label``).

    Yields:
        One line per refused label: where, then the refusal's message, its field read from the label.
    """
    for where, raw in rows:
        try:
            label = _label(raw, 0)
            check_bounds({"items": [label]}, None, config.max_judgments_per_request)
            checked_label_criteria(parse_judge_request({"items": [{**label, "answer": _STAND_IN_ANSWER}],
                                                        "oversize": "fail"}), config)
        except RequestError as err:
            message = err.message
            for prefix in ("labels[0]", "items[0]", "items"):
                if message.startswith(prefix):
                    message = message[len(prefix):].lstrip(".:").lstrip()
                    break
            yield f"{where}: {message}"


def _check_label_bound(label: dict[str, Any], i: int, max_judgments: int) -> None:
    """A label listing more criteria than one request may judge is refused before it is validated or resolved: its
    sample could never be judged, whatever its answer.

    Raises:
        RequestError: naming ``labels[i].criteria``.
    """
    criteria = label.get("criteria")
    if isinstance(criteria, list) and len(criteria) > max_judgments:
        where = f"labels[{i}].criteria"
        raise RequestError(f"{where}: {len(criteria)} criteria; this server takes at most {max_judgments} "
                           "(item, criterion) judgments per request, so this label can never be judged",
                           param=where)


def _strings(body: dict, key: str) -> list[str]:
    values = body.get(key)
    if not isinstance(values, list):
        raise RequestError(f"{key}: required, a list with one entry per sample", param=key)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise RequestError(f"{key}[{i}]: expected a string", param=f"{key}[{i}]")
    return values


def _label(raw: Any, i: int) -> dict[str, Any]:
    where = f"labels[{i}]"
    if isinstance(raw, str):
        try:
            raw = decode_json_body(raw.encode("utf-8", "surrogatepass"))
        except RequestError as err:
            # the decoder's own cause after the body's "body: " (not JSON, NaN, nested too deeply): a label that is
            # JSON but too deep was told only that it must hold an object
            cause = err.message.removeprefix("body: ")
            raise RequestError(f"{where}: a string label must hold a JSON object (instruction, criteria, ...); "
                               f"{cause}", param=where) from None
    if not isinstance(raw, dict):
        raise RequestError(f"{where}: expected a JSON object with instruction and criteria", param=where)
    if len(raw) > MAX_OBJECT_KEYS:  # counted first: a label of 400,000 keys is not sorted, nor echoed back
        raise RequestError(f"{where}: {too_many_fields(len(raw), MAX_OBJECT_KEYS)}", param=where)
    unknown = sorted(set(raw) - set(LABEL_FIELDS))
    if unknown:
        more = f" and {len(unknown) - _UNKNOWN_SHOWN} more" if len(unknown) > _UNKNOWN_SHOWN else ""
        raise RequestError(f"{where}: unknown field(s) {clip_message(str(unknown[:_UNKNOWN_SHOWN]))}{more}; a label has "
                           f"{', '.join(LABEL_FIELDS)}", param=where)
    if raw.get("criteria") is not None:  # absent or null: the wire's (the task's set, where task_type names one)
        # Read by the trl and verl clients' reading (judge.reward_clients.label_criteria): one criterion's name or a
        # JSON string of a list as the list, POLLUX-instructions rows' criteria_name as the wire's name, a key
        # Arrow/Parquet filled with None (a label column written through datasets) as absent.
        try:
            criteria = label_criteria(raw["criteria"], f"{where}.criteria",
                                      task_named=task_level_named(raw.get("task_type")))
        except ValueError as err:
            path = _CRITERIA_PATH.match(str(err))
            raise RequestError(str(err), param=path.group() if path else f"{where}.criteria") from None
        raw = {**raw, "criteria": list(criteria) if isinstance(criteria, tuple) else criteria}
    return raw


#: The field a criteria error's message starts with (``labels[i].criteria`` or one of its entries).
_CRITERIA_PATH = re.compile(r"labels\[\d+\]\.criteria(?:\[\d+\])?")


#: Unknown label fields a 400 names (their names are the client's, of any number and length).
_UNKNOWN_SHOWN = 5


#: ``extra_logs``' keys, the same for every sample of every request (module docstring: OpenRLHF's batches).
EXTRA_LOG_KEYS = ("judge_failures", "judge_engine_refused", "judge_latency_s", "judge_gate_closed",
                  "judge_empty_answer")

_ITEM_PATH = re.compile(r"items\[(\d+)\](\.answer)?")
#: The answer a label is read with where its sample has nothing to judge (``RewardRoute._read``): a ``/v1/judge``
#: item needs one, and the answer is the policy's, never the label's.
_STAND_IN_ANSWER = "-"


def admission_margin_s(deadline_s: float) -> float:
    """How long before a request's deadline of ``deadline_s`` seconds its wait for room under
    ``max_queued_judgments`` ends in 503 ``queue_full``: a quarter of it, at least a second (``RewardRoute._judged``
    says why); 170 s -> 42.5 s, the wait ending 127.5 s after the request's headers."""
    return max(1.0, deadline_s / 4)


class RewardRoute:
    """The ``/get_reward`` handler over a running judge-serve (``install_reward_routes`` wires it).

    Args:
        config: the server's configuration.
        error: the OpenAI-style error response builder (``serve.errors.error_response``).
    """

    def __init__(self, config: ServeConfig, error: Callable[..., JSONResponse]):
        self.config, self.error = config, error
        self.refused = SpacedWarning(log, "a reward request was refused (401) on POST %s: missing or wrong reward key")
        self.rule = reward_rule_of(config)
        self.reward_key = reward_key_of(config)
        self._failures = FailedVerdictsWatch()
        self._journal: JournalWriter | None = None
        # One thread of its own: the default pool also builds /v1/judge's and /get_reward's plans (tokenizing), which
        # a slow fsync would hold up; one worker also writes the requests' rows in the order they were answered.
        self._journal_thread: ThreadPoolExecutor | None = None
        # request_timeout_s bounds every route; this one's client gives up sooner (serve.config.REWARD_DEADLINE_S).
        self.deadline = min(("reward_deadline_s", config.reward_deadline_s),
                            ("request_timeout_s", config.request_timeout_s), key=lambda bound: bound[1])

    def allowed(self, request: Request, secret: str | None) -> bool:
        """The secret route: the reward key; the plain one: judge-serve's own key, open only when judge-serve has
        neither key (a reward key set means rewards are meant to be keyed: an open plain route would undo it)."""
        if secret is not None:
            return bool(self.reward_key) and hmac.compare_digest(secret.encode(), self.reward_key.encode())
        if not self.config.api_key:
            return not self.reward_key
        return bearer_matches(request.headers.raw, self.config.api_key)

    def journal(self, log_dir: Path | None) -> JournalWriter | None:
        if self._journal is None and log_dir is not None:
            self._journal = JournalWriter(Path(log_dir) / REWARD_JOURNAL)
        return self._journal

    async def __call__(self, request: Request, secret: str | None = None) -> Response:
        # The client's clock started before ours: ours runs from its headers, so the body's reading counts too.
        deadline = time.monotonic() + self.deadline[1]
        if not self.allowed(request, secret):
            keyed = "POST /get_reward/<reward key> with the key in $" + self.config.reward_key_env
            how = keyed if secret is not None or not self.config.api_key \
                else "Authorization: Bearer <key>, or POST /get_reward/<reward key>"  # fmt: skip
            # OpenRLHF never reads a refusal's body: the log is the only place its cause is kept (the path's key is
            # written <reward-key> by SecretPathFilter, on this logger). Spaced: a client without the key, however
            # many times it asks, adds a line a minute, not one per request. The path is the client's (decoded: %1b
            # is an ESC), shown as a console shows it; the mask runs on that text, so only a space ends the masked key
            # (what visible() escapes, a NEL among them, is masked with it).
            self.refused(visible(request.url.path))
            # Closed after the answer, its body unread, as judge-serve's own 401 (serve.connections.ApiKeyMiddleware).
            return self.error(401, f"missing or wrong reward key: send {how}", "authentication_error",
                              code="invalid_api_key", headers={"Connection": "close"})
        sample_of: list[int] = []  # a /v1/judge error's items[k] is about sample sample_of[k]
        data = await request.body()
        state = request.app.state.serve
        try:
            queries, answers, parsed, resolved = await read_off_loop(len(data), lambda: self._read(data, sample_of),
                                                                     state.large_decodes, deadline)
        except RequestError as err:
            return self._refused(err, sample_of)
        except asyncio.TimeoutError:  # other large bodies held every turn to decode one until the deadline
            return self._too_late()
        started = time.monotonic()
        results: list[list[JudgeResult]] = [[] for _ in queries]
        if parsed is not None:
            try:
                response = await self._judged_in_time(request, state, parsed, resolved, deadline)
            except RequestError as err:
                return self._refused(err, sample_of)
            except (EngineUnavailable, EngineFailure) as err:
                if isinstance(err, QueueFull):  # OpenRLHF never reads the body: the log keeps the cause
                    log.warning("a reward request found no room in the judgment queue: %s", err)
                # As /v1/judge answers them: an engine's refusal (a 4xx) keeps its status and sanitized message, so
                # the client does not retry what the engine will refuse again.
                return judgment_failed(err, state)
            except asyncio.TimeoutError:
                return self._too_late()
            if response is None:  # the client left: nobody to answer (serve.app answers a body never read alike)
                return Response(status_code=499)
            for k, item in enumerate(response.items):
                results[sample_of[k]] = list(item.results)
            aborted = sum(r.error == VerdictError.ABORTED for sample in results for r in sample)
            if aborted:
                # An engine that aborted a generation (paused) said nothing about the answer: a 503 the framework
                # retries (OpenRLHF asks again), not a failure valued as the answer's, which would lower its reward.
                log.warning("%d judgments of a reward request were aborted by the engine: answered 503", aborted)
                return self.error(503, f"the engine aborted {aborted} of the request's judgments; retry",
                                  "service_unavailable", code="engine_unavailable",
                                  headers=state.retry_headers(state.engines))
        latency = time.monotonic() - started
        rewards = [reward_of(r, self.rule) if r else None for r in results]
        failing = self._failures.add(rewards)
        if failing:  # OpenRLHF logs the counts only, beside its other metrics: the failures are said here too
            log.warning("rewards: %s", failing)
        body_out = self._body(rewards, latency)
        await self._write_journal(state, request.headers.get("x-request-id", ""), answers, results, rewards, latency)
        return JSONResponse(body_out)

    def _too_late(self) -> Response:
        name, seconds = self.deadline
        message = (f"the rewards took longer than {name}={seconds:g} s (the wait for an engine included); "
                   "their judging is cancelled")
        # OpenRLHF never reads the body (it resends, and after its fifth 504 fails the step): the log keeps the cause.
        log.warning("a reward request was answered 504: %s", message)
        return self.error(504, message, "timeout", code="timeout")

    def _read(self, data: bytes, sample_of: list[int]) -> tuple[list[str], list[str], Any, list | None]:
        """The body's samples read and checked (in a worker thread for a large body: ``serve.schema.read_off_loop``):
        the queries, each sample's answer, the ``/v1/judge`` request of those with an answer (None: none has) and
        its items' criteria as the labels' check resolved them (``serve.jobs.check_criteria``), which the judging
        takes as they are. ``sample_of`` is filled as the samples are read, so that an error about ``items[k]``
        names its sample.

        Raises:
            RequestError: naming the first bad field.
        """
        body = decode_json_body(data)
        if not isinstance(body, dict):
            raise RequestError("body: expected a JSON object with query, prompts and labels", param="body")
        queries, prompts = _strings(body, "query"), _strings(body, "prompts")
        labels = body.get("labels")
        if not isinstance(labels, list):
            raise RequestError("labels: required, a list with one label (instruction, criteria) per sample", param="labels")
        if not (len(queries) == len(prompts) == len(labels)):
            raise RequestError(f"query, prompts, labels: {len(queries)}, {len(prompts)} and {len(labels)} entries; "
                               "one each per sample", param="query")  # fmt: skip
        if len(queries) > self.config.max_batch_items:
            # OpenRLHF before 0.9.1 posts a whole rollout in one request: the refusal says which version to use.
            raise RequestError(f"query: {len(queries)} samples; this server takes at most "
                               f"{self.config.max_batch_items} per request (OpenRLHF >= 0.9.1 posts one sample per "
                               "request; earlier versions post the whole rollout at once)", param="query",
                               code="too_many_items")  # fmt: skip
        labelled, answers = [], []
        for i, (query, prompt, raw) in enumerate(zip(queries, prompts, labels)):
            labelled.append(_label(raw, i))
            # Counted on each label, judged or not: every label is parsed and resolved below, and the bound on the
            # samples to judge leaves a label without an answer free to list any number of criteria.
            _check_label_bound(labelled[-1], i, self.config.max_judgments_per_request)
            answer = answer_of(query, prompt)
            if answer is None:
                raise RequestError(f"query[{i}]: does not start with prompts[{i}]; the answer is the query after "
                                   "its prompt", param=f"query[{i}]")  # fmt: skip
            answers.append(answer)
        judged = [i for i, answer in enumerate(answers) if answer]
        # The judgments the samples to judge ask for, counted on their labels as sent, before any is validated or
        # resolved, as /v1/judge counts its items' (a task's criteria set counts once resolved, at the judging).
        check_bounds({"items": [labelled[i] for i in judged]}, None, self.config.max_judgments_per_request)
        if not labelled:  # no samples, no labels: a /v1/judge request needs an item to be read at all
            return queries, answers, None, None
        sample_of[:] = range(len(labelled))
        # Every label read once as the /v1/judge item it becomes, with its sample's answer, or a stand-in where the
        # sample has nothing to judge: one label gets one answer, and every label is checked whatever its answer.
        # A judgment that cannot fit the judge's context is that sample's failure (valued by on_failure), not a 400
        # that would cost the trainer the reward: the policy wrote the long answer, not the client.
        request = parse_judge_request({"items": [{**label, "answer": answers[i] or _STAND_IN_ANSWER}
                                                 for i, label in enumerate(labelled)], "oversize": "fail"})
        resolved = self._check_labels(request)
        sample_of[:] = judged
        if not judged:
            return queries, answers, None, None
        parsed = request.model_copy(update={"items": [request.items[i] for i in judged]})
        return queries, answers, parsed, [resolved[i] for i in judged]

    def _check_labels(self, request: JudgeRequest) -> list:
        """Every label's criteria, task and rubric scales resolved as the judging resolves them
        (``serve.jobs.check_criteria``), whatever its sample's answer: a sample with nothing to judge is not judged,
        but its label is refused as any other's is. ``"auto"`` takes its criteria from the classifier's reading of
        the label's instruction (every method of ``judge.criteria_auto`` reads the instruction only), at the
        judging: a label can be checked only for what it says beside it and for a classifier on this server.

        Returns:
            Per label, its criteria resolved (None for ``"auto"``): the judging's, never resolved again.

        Raises:
            RequestError: naming ``items[i]``, the label of sample i.
        """
        return checked_label_criteria(request, self.config)

    async def _judged_in_time(self, request: Request, state, parsed, resolved, deadline: float
                              ) -> JudgeResponse | None:
        """``parsed`` judged once the engines can take it, by ``deadline`` (``time.monotonic()``), and cancelled
        past it as ``/v1/judge``'s judging is past ``request_timeout_s`` (``asyncio.wait_for``), or as soon as the
        client disconnects, as ``/v1/judge``'s is (``serve.connections.unless_disconnected``).

        Returns:
            The response, or None when the client disconnected first.

        Raises:
            asyncio.TimeoutError: past the deadline.
            RequestError, EngineUnavailable, EngineFailure: from the judging.
        """
        judged = self._judged(state, parsed, resolved, deadline, request.headers.get("x-request-id", ""))
        try:
            return await unless_disconnected(request, asyncio.wait_for(judged, deadline - time.monotonic()))
        except ClientDisconnect:
            log.warning("the client of a reward request disconnected before its rewards; their judging is cancelled")
            return None

    async def _judged(self, state, parsed, resolved, deadline: float, request_id: str = "") -> JudgeResponse:
        # The request's own checks against this server's judge (serve.judging.Judge.check, given the labels'
        # criteria as _read resolved them) before any wait for an engine: a request that can never succeed is
        # refused at once.
        if state.judge is not None:
            checked = state.judge.check(parsed, resolved=resolved)
        else:  # what needs no judge (its configuration and the taxonomy), as /v1/judge asks it while engines start
            from serve.judging import check_before_start

            check_before_start(parsed, state.config, state.layout.kind, state.engine_models)
            checked = None
        problem = await self._engines_unavailable(state, deadline)
        if problem:
            raise EngineUnavailable(problem)
        if state.judge is None:
            raise EngineUnavailable("the engines are still starting")
        # The request id goes with its engine calls, as /v1/judge's. Over max_queued_judgments the request waits for
        # room rather than take the 503 /v1/judge's client gets: OpenRLHF's 5 retries a second apart ignore
        # Retry-After (openrlhf/utils/agent.py, _post_request), and a rollout's burst of one-sample requests would
        # fail its step. The wait ends a quarter of the deadline before it (at least a second, the engine wait's
        # margin), not a second before: once admitted, the request is still to be judged, behind judgments enough to
        # have kept it waiting, and with a second left it would all but surely end 504 after its engine calls began,
        # holding room the next in line could have used. A share of the deadline, not a fixed time, as the judging
        # time scales with the load the deadline was set for; a 503 then is one its client's retries can act on.
        return await state.judge.run(checked or state.judge.check(parsed, resolved=resolved), request_id=request_id,
                                     wait_until=deadline - admission_margin_s(self.deadline[1]))

    async def _engines_unavailable(self, state, deadline: float) -> str | None:
        """Why an engine cannot take the request, after waiting up to ``reward_engine_wait_s`` for it to come back
        (a restart takes tens of seconds; OpenRLHF's 5 quick retries would not span it and the step would fail);
        None once every engine can. A server that failed or drains is not waited for. The wait ends a second before
        the request's ``deadline`` (a ``request_timeout_s`` shorter than the wait), so the client hears 503 with
        Retry-After, not the 504 of a deadline spent waiting."""
        until = min(time.monotonic() + self.config.reward_engine_wait_s, deadline - 1.0)
        announced = False
        while True:
            if state.status == "failed":
                # Asked of the server, not of its engines: a start that failed before its first engine registered
                # leaves none to ask, and "still starting" with a Retry-After would send the client back to a server
                # that exits. The failure, as /v1/chat/completions answers it (serve.supervision.engine_problem).
                return state.engine_problem("")
            problem = next((p for p in map(state.engine_problem, state.engines) if p), None)
            if problem is None or state.status in ("failed", "draining") or time.monotonic() >= until:
                return problem
            if not announced:
                log.warning("a reward request waits up to %.0f s for the engines: %s",
                            self.config.reward_engine_wait_s, problem)
                announced = True
            await asyncio.sleep(0.25)

    def _refused(self, err: RequestError, sample_of: list[int]) -> JSONResponse:
        """``err`` in the route's own fields: ``items[k]`` is the label of sample ``sample_of[k]`` (``labels[i]``;
        its answer, ``query[i]``), and a bound over every item (the judgments a request may ask for) is one over the
        labels, whose criteria they are."""
        def sample_path(match: re.Match) -> str:
            k = int(match.group(1))
            i = sample_of[k] if k < len(sample_of) else k
            return f"query[{i}]" if match.group(2) else f"labels[{i}]"

        message, param = _ITEM_PATH.sub(sample_path, err.message), _ITEM_PATH.sub(sample_path, err.param or "") or None
        if param == "items":
            param, message = "labels", "labels" + message[len("items"):] if message.startswith("items") else message
        kind = "not_found_error" if err.status == 404 else "invalid_request_error"
        # OpenRLHF never reads a refusal's body (it retries, then fails the step): the log keeps the cause.
        log.warning("a reward request was refused (%d, param %s): %s", err.status, visible(param, MESSAGE_MAX_CHARS),
                    visible(message, MESSAGE_MAX_CHARS))
        return self.error(err.status, message, kind, param, err.code)

    def _body(self, rewards: list[Reward | None], latency: float) -> dict[str, Any]:
        empty = self.rule.empty_answer
        values = [r.value if r is not None else (float(empty) if empty is not None else None) for r in rewards]
        extra: dict[str, list[float]] = {
            "judge_failures": [float(r.failed) if r else 0.0 for r in rewards],
            # of those failures, the engine's refusals: a refused judgment's zero told from an unread verdict's
            "judge_engine_refused": [float(engine_refusals(r)) for r in rewards],
            "judge_latency_s": [latency] * len(rewards),
            "judge_gate_closed": [1.0 if r is not None and r.gate_closed else 0.0 for r in rewards],
            "judge_empty_answer": [0.0 if r is not None else 1.0 for r in rewards],
        }
        return {"rewards": values, "scores": list(values), "extra_logs": extra}

    async def _write_journal(self, state, request_id: str, answers, results, rewards, latency: float) -> None:
        """The request's rows appended to the rewards journal on the journal's own thread (an fsync takes
        milliseconds, and every other request's reading and answering waits while the event loop does), in one
        ``append``: a request's rows stay together and in order, and requests' rows in the order they were answered.
        Awaited before the answer, so a row is on disk once its reward is sent."""
        journal = self.journal(getattr(state, "log_dir", None))
        if journal is None:
            return
        now = time.time()
        rows = []
        for i, (answer, sample, reward) in enumerate(zip(answers, results, rewards)):
            rows.append({
                "request_id": request_id, "time": now, "index": i, "latency_s": latency,
                # What was judged, as read from the query: OpenRLHF sends no request id, so the answer is what ties
                # a row to the trainer's sample; clipped, as a policy's answer may run to megabytes.
                "answer": answer[:JOURNAL_ANSWER_CHARS], "answer_chars": len(answer),
                "reward": reward.value if reward else self.rule.empty_answer,
                "empty_answer": reward is None, "failed": reward.failed if reward else 0,
                "gate_closed": reward.gate_closed if reward else None,
                "criteria": [{**part.to_json(), "error_reason": result.error_reason}
                             for part, result in zip(reward.criteria, sample)] if reward else [],
            })  # fmt: skip
        try:
            if self._journal_thread is None:
                self._journal_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rewards-journal")
            await asyncio.get_running_loop().run_in_executor(self._journal_thread, functools.partial(journal.append,
                                                                                                       *rows))
        except OSError as err:  # a full disk must not cost the trainer its rewards
            log.error("could not write the rewards journal: %s", err)


def install_reward_routes(app: FastAPI, config: ServeConfig, error: Callable[..., JSONResponse]) -> None:
    """Add ``POST /get_reward`` and ``POST /get_reward/{secret}`` to judge-serve's app, and keep the secret out of
    uvicorn's access log."""
    route = RewardRoute(config, error)
    _install_secret_path_filters()

    async def plain(request: Request) -> Response:
        return await route(request)

    async def with_secret(request: Request, secret: str) -> Response:
        return await route(request, secret)

    app.add_api_route("/get_reward", plain, methods=["POST"])
    app.add_api_route("/get_reward/{secret}", with_secret, methods=["POST"])
