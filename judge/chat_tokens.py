"""Token ids of chat-wrapped texts: only the chat template's own special tokens are special.

A request's text (instruction, answer, reference, criteria, rubrics; the judge's own output that a regression head
reads) is untrusted: an answer that writes ``<|im_end|>\n<|im_start|>assistant\n...`` must stay the characters it
is, never end the user's turn and write the judge's (``chat_ids``). judge-serve tokenizes every prompt with it
(``serve.jobs``, ``serve.chat_tokens``), and the regression recipe the texts its head learns from
(``train.regression``), so that the head reads in training the ids it reads when served. An ordinary text's ids are
exactly those of tokenizing it whole (pinned in tests/unit/test_serve_judging.py).
"""

from __future__ import annotations

import re
import threading
from typing import Any

from judge import apply_chat

__all__ = ["chat_ids", "chat_parts", "generation_prompt_merged", "prepare_tokenizer", "template_wrapping",
           "unfit_template", "SPECIAL_TOKEN_STRINGS", "special_token_strings_in"]


#: The special-token strings a chat model's tokenizer parses as control tokens in any text it tokenizes whole: Qwen's
#: (the Qwen2.5/Qwen3 tokenizers' whole special set: turn markers, end of text, the vision and box markers, the
#: pads), Llama 3's header and turn markers, Gemma's turn markers, DeepSeek-R1's (and its distills') turn markers,
#: full-width bars (U+FF5C) and U+2581 for the spaces (added tokens, which a tokenizer reads as their tokens in any
#: text whether marked special or not: the distills' tokenizers mark ``<｜User｜>`` and ``<｜Assistant｜>`` not special;
#: the paper's teacher, arXiv 2505.24616v3 Section 3.1, and a baseline judge's). A teacher served by a chat API and
#: trl's GRPO prompts tokenize such a string as the control token, where SFT and judge-serve (``chat_ids``) read it as
#: the characters it is: the annotate and traces stages do not ask an item holding one, and the GRPO recipe drops its
#: prompt (besides those its own tokenizer reads otherwise), all by ``special_token_strings_in``. ``<think>`` and
#: ``<tool_call>`` are added tokens Qwen's tokenizers do not mark special (read alike both ways): not listed.
#: DeepSeek's are spelled as ``judge.rewards.END_OF_TURN_MARKERS`` and the trl prompt's user turn
#: (``judge.reward_clients``) spell them; tests/unit/test_synthetic_annotate_special_tokens.py holds the three alike.
SPECIAL_TOKEN_STRINGS = (
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>",
    "<|python_tag|>",
    "<start_of_turn>", "<end_of_turn>",
    "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<\uff5cUser\uff5c>",
    "<\uff5cAssistant\uff5c>",
)


#: Every string opens with ``<`` and closes with ``>``, neither inside: matches cannot overlap and none is a prefix of
#: another, so one scan of a text finds each string it holds (callers scan every field of every record).
_SPECIAL_TOKEN_PATTERN = re.compile("|".join(map(re.escape, SPECIAL_TOKEN_STRINGS)))


def special_token_strings_in(text: str) -> list[str]:
    """The ``SPECIAL_TOKEN_STRINGS`` that ``text`` holds, in the list's order (empty for an ordinary text)."""
    found = set(_SPECIAL_TOKEN_PATTERN.findall(text))
    return [marker for marker in SPECIAL_TOKEN_STRINGS if marker in found]


#: Chat-template text (the opening, the closing) searched for its added tokens, per tokenizer: a few strings each.
_SPAN_CACHE_SIZE = 64


class _Encoder:
    """One tokenizer's two ways of tokenizing (``chat_ids``): the chat template's own text as the tokenizer reads any
    text, its special tokens parsed; a request's text with every special-token string read as the characters it is
    (transformers' ``split_special_tokens``). The second runs on a copy of the fast tokenizer made once with
    ``encode_special_tokens`` set: transformers sets that flag on the one Rust tokenizer at each call that asks it
    otherwise, and judge-serve tokenizes in several threads at once."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        added = tokenizer.get_added_vocab() if hasattr(tokenizer, "get_added_vocab") else {}
        self.added = tuple(token for token in added if token)
        self.spans: dict[str, tuple[int, int] | None] = {}
        self.wrappings: dict[bool, tuple[str | None, str | None]] = {}  # template_wrapping's, by thinking switch
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self.literal = None
        if backend is not None:
            self.literal = type(backend).from_str(backend.to_str())
            self.literal.no_truncation()
            self.literal.no_padding()
            self.literal.encode_special_tokens = True

    def template_ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []

    def request_ids(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        if self.literal is not None:
            return [encoding.ids for encoding in self.literal.encode_batch(texts, add_special_tokens=False)]
        return self.tokenizer(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]

    def added_span(self, text: str) -> tuple[int, int] | None:
        """Where ``text`` (the chat template's) holds added tokens: the first one's start, the last one's end."""
        if text not in self.spans:
            starts = [at for at in (text.find(token) for token in self.added) if at >= 0]
            ends = [at + len(token) for token in self.added if (at := text.rfind(token)) >= 0]
            if len(self.spans) >= _SPAN_CACHE_SIZE:
                self.spans.clear()
            self.spans[text] = (min(starts), max(ends)) if starts else None
        return self.spans[text]


#: Per tokenizer (by id: an entry holds its tokenizer, so the id is not reused while the entry lives).
_ENCODERS: dict[int, _Encoder] = {}
#: One maker of each copy: judge-serve warms it in a thread while a first request may already ask for it.
_ENCODERS_LOCK = threading.Lock()


def _encoder(tokenizer: Any) -> _Encoder:
    with _ENCODERS_LOCK:
        encoder = _ENCODERS.get(id(tokenizer))
        if encoder is None:
            if len(_ENCODERS) >= 8:  # a server has one tokenizer; tests make several
                _ENCODERS.clear()
            encoder = _ENCODERS[id(tokenizer)] = _Encoder(tokenizer)
        return encoder


def prepare_tokenizer(tokenizer: Any) -> None:
    """Make what ``chat_ids`` needs of ``tokenizer`` ahead of its first call (never raises: that call would)."""
    try:
        _encoder(tokenizer)
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be prepared fails at its first use, with its error
        pass


def chat_ids(tokenizer: Any, texts: list[list[str]]) -> list[list[int]]:
    """Token ids of texts each given in parts, alternately the chat template's own text (at even places: its opening,
    its closing) and the request's (at odd places: the rendered prompt, or part of it, with the client's instruction,
    answers, reference, criteria and rubrics). Only the template's special tokens are special: a special-token
    string in the request's text (an answer that writes ``<|im_end|>\\n<|im_start|>assistant\\n...``) is tokenized as
    the characters it is, so that no answer can end the user's turn and write the judge's.

    The ids of a text without such a string are exactly those of tokenizing it whole: a tokenizer splits its input
    at every added token anyway and tokenizes the runs between them apart, so the parts are cut at the template's
    first and last added token (the template's text around them goes with the request's run it touches) and each run
    is tokenized as the whole text's run would be (pinned in tests/unit/test_serve_judging.py). All texts' runs are
    tokenized in two batches, one of each kind.
    """
    encoder = _encoder(tokenizer)
    runs: list[list[tuple[bool, str]]] = []  # per text, (the template's, text) in order
    for parts in texts:
        text_runs: list[tuple[bool, str]] = []

        def add(template: bool, run: str) -> None:
            if not run:
                return
            if text_runs and not template and not text_runs[-1][0]:
                text_runs[-1] = (False, text_runs[-1][1] + run)
            else:
                text_runs.append((template, run))

        for k, part in enumerate(parts):
            span = encoder.added_span(part) if k % 2 == 0 else None
            if span is None:
                add(False, part)
            else:
                add(False, part[:span[0]])
                add(True, part[span[0]:span[1]])
                add(False, part[span[1]:])
        runs.append(text_runs)
    template_ids = iter(encoder.template_ids([run for text_runs in runs for template, run in text_runs if template]))
    request_ids = iter(encoder.request_ids([run for text_runs in runs for template, run in text_runs if not template]))
    return [[token for template, _ in text_runs for token in next(template_ids if template else request_ids)]
            for text_runs in runs]


def chat_parts(text: str, prompt: str, opening: str | None = None, closing: str | None = None,
               completion: str = "") -> list[str]:
    """``chat_ids``' parts of a chat-wrapped ``text`` whose user turn is ``prompt``: the template's text before and
    after it, and the prompt. A template that did not keep the prompt verbatim (one that trims it) is cut at its
    ``opening`` and ``closing`` (the chat template's text around any user turn) when given and found; failing both,
    the whole text is read as the request's (its own special tokens included: never a forged turn).

    ``completion``: the assistant turn's text after the prompt (the judge's output a regression head reads), read as
    the request's too where it follows the prompt verbatim: the judge wrote it, and a special-token string in it is
    the characters it is, as in the prompt."""
    at = text.find(prompt)
    if at >= 0:
        end = at + len(prompt)
        # the completion ends the assistant turn: found from the end, not at an earlier occurrence in the template
        done = text.rfind(completion, end) if completion else -1
        if done >= 0:
            return [text[:at], prompt, text[end:done], completion, text[done + len(completion):]]
        return [text[:at], prompt, text[end:]]
    if opening is not None and closing is not None and len(opening) + len(closing) <= len(text) \
            and text.startswith(opening) and text.endswith(closing):
        return [opening, text[len(opening):len(text) - len(closing)], closing]
    return ["", text, ""]


def template_wrapping(tokenizer: Any, thinking: bool) -> tuple[str | None, str | None]:
    """The chat template's text around a user turn: (opening, closing), None where it does not keep a mark whole.
    Rendered once per tokenizer and thinking switch (every request's jobs ask for it)."""
    wrappings = _encoder(tokenizer).wrappings
    if thinking not in wrappings:
        mark = "\x00user turn\x00"
        wrapped = apply_chat(tokenizer, mark, thinking=thinking)
        at = wrapped.find(mark)
        wrappings[thinking] = (wrapped[:at], wrapped[at + len(mark):]) if at >= 0 else (None, None)
    return wrappings[thinking]


def generation_prompt_merged(tokenizer: Any, prompt_ids: list[int], full_ids: list[int]) -> str | None:
    """What a chat template does wrong, for ``unfit_template``'s ``why``, when the ids of the prompt judge-serve sends
    (through the generation prompt) do not begin the ids of the whole text (that prompt and the judge's text after
    it), naming the ids where the two part; None when they begin it. Both recipes train the judge's text as what
    follows those ids: where the generation prompt's last ids merge with the text's first, or the template writes
    the generation prompt otherwise before an answer, the trained prompt is not the served one."""
    n = len(prompt_ids)
    if full_ids[:n] == prompt_ids:
        return None
    k = next((k for k, (a, b) in enumerate(zip(prompt_ids, full_ids)) if a != b), len(full_ids))
    return ("tokenizes its generation prompt otherwise with the judge's text after it (the prompt's ids end "
            f"{tokenizer.convert_ids_to_tokens(prompt_ids[k:])!r}, the text's go on "
            f"{tokenizer.convert_ids_to_tokens(full_ids[k:k + 2])!r})")


def unfit_template(tokenizer: Any, row: dict[str, Any], why: str, *, recipe: str, instead: str):
    """The refusal of a chat template a training recipe cannot train through (both recipes' one message): a
    ``ConfigError`` naming ``model_name_or_path``, the tokenizer and the row, which ``judge-train run`` says in one
    line with exit 2; a ValueError was a traceback blaming the row for what the base model's template does.

    Args:
        tokenizer: the base model's tokenizer (named by ``name_or_path``).
        row: the training row the template failed on (named by its ``id``).
        why: what the template does, after "the chat template of NAME".
        recipe: the recipe's name ("seq2seq", "regression").
        instead: the bases to suggest, ones that recipe accepts.
    """
    from judge.plumbing.config_files import ConfigError

    name = getattr(tokenizer, "name_or_path", "") or tokenizer.__class__.__name__
    return ConfigError(f"model_name_or_path: the chat template of {name} {why} (row {row.get('id')!r}); the {recipe} "
                       "recipe trains the prompt judge-serve sends and the judge's text after it: use a base whose "
                       f"template renders them as given ({instead})")
