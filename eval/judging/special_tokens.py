"""Rows whose text holds a special-token string, counted where a chat server tokenizes the judge's prompt.

judge-serve's ``/v1/judge``, and the recipes that train a judge, tokenize a row's text (instruction, answer,
reference, criterion, rubrics; a pair's answers) with its special-token strings as the characters they are
(``judge.chat_tokens.chat_ids``). On the chat route (``eval.judging.backends.ChatBackend``, the pairwise chat client)
judge-eval sends chat messages and the server renders the chat template over them and tokenizes the whole text:
vLLM's OpenAI server (and judge-serve's chat passthrough, which hands the messages to its engine) reads an answer's
``<|im_end|>\\n<|im_start|>assistant\\n...`` as control tokens, so the judge sees another prompt than the one it was
trained on (its user turn ended early, a turn of the answer's making after it). judge-eval cannot ask such a server
to tokenize a message's text literally, so it counts those rows (``special_token_rows``), names the first ones in a
warning, and records them in run.json (``chat_special_tokens``) and the run's summary (``special_token_rows``):
their verdicts are kept and scored, and a reader of the run knows which were asked of a prompt the judge was never
trained on. judge-serve's ``/v1/judge`` (``--backend judge-serve``) asks them as trained.

The strings are ``judge.chat_tokens.SPECIAL_TOKEN_STRINGS`` (Qwen's, Llama 3's, Gemma's and
DeepSeek-R1's), the list the annotate and traces stages and the GRPO recipe screen prompts by: a chat server's
tokenizer is not judge-eval's to load.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from judge.chat_tokens import SPECIAL_TOKEN_STRINGS, special_token_strings_in
from judge.prompts import PAIRWISE_FIELDS, PROMPT_FIELDS

__all__ = ["TEXT_FIELDS", "N_NAMED", "special_token_rows", "special_token_warning", "merged_special_token_rows"]

#: The fields of a pointwise record and of a pair that a judge's prompt holds verbatim: the templates' own, so a field
#: a template gains is counted with it.
TEXT_FIELDS = tuple(dict.fromkeys((*PROMPT_FIELDS, *PAIRWISE_FIELDS)))
#: How many rows' ids the warning and run.json name.
N_NAMED = 5


def special_token_rows(records: Iterable[Any]) -> dict[str, Any]:
    """run.json's ``chat_special_tokens``: how many ``records`` hold a special-token string in a prompt field
    (``n_rows``), the first ``N_NAMED`` of their ids in data order (``first_ids``), and the strings found, in
    ``SPECIAL_TOKEN_STRINGS``' order (``strings``)."""
    ids: list[Any] = []
    found: set[str] = set()
    for record in records:
        held = {marker for field in TEXT_FIELDS if isinstance(text := getattr(record, field, None), str)
                for marker in special_token_strings_in(text)}
        if held:
            ids.append(record.id)
            found |= held
    return {"n_rows": len(ids), "first_ids": ids[:N_NAMED],
            "strings": [marker for marker in SPECIAL_TOKEN_STRINGS if marker in found]}


def special_token_warning(counted: dict[str, Any]) -> str:
    """The console's warning for rows ``special_token_rows`` counted (its ``n_rows`` above 0)."""
    n = counted["n_rows"]
    more = f" and {n - len(counted['first_ids'])} more" if n > len(counted["first_ids"]) else ""
    return (f"{n} row{'s' if n != 1 else ''} hold a special-token string ({', '.join(counted['strings'])}) in the "
            f"text the judge reads (rows {', '.join(map(repr, counted['first_ids']))}{more}): the chat route's server "
            "tokenizes the prompt whole and reads it as the judge's control token (a turn ended, a turn injected), "
            "not as the characters judge-serve's /v1/judge and the judge's training read; their verdicts are kept, "
            "counted in run.json's chat_special_tokens; ask them through judge-serve (--backend judge-serve) for the "
            "prompt the judge was trained on")


def merged_special_token_rows(counts: list[dict[str, Any]]) -> dict[str, Any]:
    """The merged run.json's ``chat_special_tokens`` of shards' own (``judge-eval merge``, shards in data order): the
    rows summed, the first ``N_NAMED`` ids across them, the strings any shard found."""
    found = {marker for counted in counts for marker in counted.get("strings") or ()}
    return {"n_rows": sum(int(counted.get("n_rows") or 0) for counted in counts),
            "first_ids": [row for counted in counts for row in counted.get("first_ids") or ()][:N_NAMED],
            "strings": [marker for marker in SPECIAL_TOKEN_STRINGS if marker in found]}
