"""Token ids of chat-wrapped prompts: only the chat template's own special tokens are special.

judge-serve tokenizes every prompt itself (``serve.jobs``), and a request's text (instruction, answer, reference,
criteria, rubrics; the judge's own output that a regression head reads) is untrusted: an answer that writes
``<|im_end|>\n<|im_start|>assistant\n...`` must stay the characters it is, never end the user's turn and write the
judge's (``chat_ids``). The criteria of one item share every token up to the criterion, tokenized once per item
(``tokenize_sharing_prefixes``). An ordinary prompt's ids are exactly those of tokenizing it whole (pinned in
tests/unit/test_serve_judging.py). The rule of the two kinds of text is ``judge.chat_tokens``', which the regression
recipe's training uses too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.chat_tokens import chat_ids, chat_parts, template_wrapping
from judge.prompts import POLLUX_PROMPT, PromptTemplate
from serve.schema import ResolvedCriterion

__all__ = ["tokenize_sharing_prefixes"]


def tokenize_sharing_prefixes(tokenizer: Any, texts: list[str], jobs: list[tuple[int, ResolvedCriterion, str]], *,
                              known: Mapping[int, tuple[str, list[int]]] | None = None,
                              template: PromptTemplate = POLLUX_PROMPT, thinking: bool = False) -> list[list[int]]:
    """Token ids of each chat-wrapped prompt, the part every criterion of an item shares tokenized once per item.

    The split is at the start of ``### Критерий оценки:`` (``template.criterion_part``: everything before it, the
    instruction, reference and answer, is the same for every criterion of one item), right after the answer's
    ``\\n\\n``: a boundary of the Qwen2 pre-tokenizer (a newline run is a pre-token of its own, and no merge
    crosses pre-tokens), so prefix ids + suffix ids are the whole text's ids (pinned against whole-text tokenizing,
    for both templates, in tests/unit/test_serve_judging.py). A 1 MiB answer on 64 criteria is then tokenized once,
    not 64 times. A text whose prompt the chat template did not keep verbatim is tokenized whole. Each call is one batch, which the fast tokenizer encodes
    in Rust (docs/performance.md, ``bench/serve_tokenize.py``: ``build_jobs`` against whole prompts in one batch and
    one call each).

    Args:
        texts: the chat-wrapped prompts.
        jobs: per text, (item index, criterion, the rendered prompt inside it).
        known: per item, a prefix text already tokenized and its ids (``_shared_prefixes``): used where it is
            exactly that item's shared part, never tokenized again.
        template: the pointwise template the prompts were rendered with.
        thinking: the chat template's thinking switch the texts were wrapped with (where a template did not keep a
            prompt verbatim, its text around the user turn tells the request's text from the template's).

    The request's text is tokenized with its special-token strings as text (``chat_ids``).
    """
    split: list[int | None] = []
    where: list[int] = []  # per text, where its prompt starts
    for text, (_, crit, prompt) in zip(texts, jobs):
        tail = template.criterion_part.format(criteria_name=crit.name, rubrics=crit.rubrics)
        at = text.find(prompt)
        where.append(at)
        split.append(at + len(prompt) - len(tail) if at >= 0 and prompt.endswith(tail) else None)
    prefixes: dict[int, str] = {}
    prefix_parts: dict[int, list[str]] = {}
    for text, (item, _, _), cut, at in zip(texts, jobs, split, where):
        if cut is not None and item not in prefixes:
            prefixes[item], prefix_parts[item] = text[:cut], [text[:at], text[at:cut]]
    shared = [cut is not None and texts[k][:cut] == prefixes[jobs[k][0]] for k, cut in enumerate(split)]
    known = known or {}
    prefix_ids = {i: known[i][1] for i in prefixes if i in known and known[i][0] == prefixes[i]}
    order = sorted(i for i in prefixes if i not in prefix_ids)
    if order:
        prefix_ids.update(zip(order, chat_ids(tokenizer, [prefix_parts[i] for i in order])))
    opening, closing = template_wrapping(tokenizer, thinking) if not all(shared) else (None, None)
    rest = []
    for k, (text, (_, _, prompt)) in enumerate(zip(texts, jobs)):
        if shared[k]:  # the prompt's own part from the cut, then the template's closing
            end = where[k] + len(prompt)
            rest.append(["", text[split[k]:end], text[end:]])
        else:
            rest.append(chat_parts(text, prompt, opening, closing))
    rest_ids = chat_ids(tokenizer, rest) if rest else []
    return [prefix_ids[jobs[k][0]] + ids if shared[k] else ids for k, ids in enumerate(rest_ids)]
