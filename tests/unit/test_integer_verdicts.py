"""The integer verdict format (``ai-forever/Pollux-4B-Judge``): the parser on the outputs POLLUX's own client accepts,
the format chosen from the judge, and ``judge-eval run`` against a server answering as
``vllm serve ai-forever/Pollux-4B-Judge --reasoning-parser qwen3`` does.

The client is ``demo/serve_pollux_demo.py`` in ``ai-forever/POLLUX``: lines 160-168 take ``message.content`` and
``message.reasoning`` (or the first inline ``<think>...</think>`` block, removed from the answer), lines 170-180 read
``int(answer)`` or else the integer that ends the answer (``r"(-?\\d+)\\s*$"``); anything else is a parse error.
Each row below says which of those lines decides it.

The tests of this subject that start heavy components are in tests/integration/serving/test_integer_verdicts.py.
"""

from __future__ import annotations

import json

import pytest

import judge
from judge import Scale, VerdictError, VerdictFormat, parse_integer_verdict, verdict_format_of_model

SCALE = Scale((0, 1, 2))
PAIRWISE = Scale((-1, 0, 1))

# (content, separated reasoning, scale, expected score, expected feedback)
PARSED = [
    # lines 161-162, 171: vLLM --reasoning-parser qwen3 sends the reasoning apart and content is the bare integer
    ("2", "Ответ верный и полный.", SCALE, 2.0, "Ответ верный и полный."),
    # lines 163-166: no separated field; the inline block is the reasoning and is removed before int()
    ("<think>\nСравниваю с эталоном.\n</think>\n\n1", None, SCALE, 1.0, "Сравниваю с эталоном."),
    # line 165: a separated reasoning wins over an inline block ("reasoning or thinking_match")
    ("<think>inline</think>0", "separated", SCALE, 0.0, "separated"),
    # lines 173-176: not an integer as a whole, but text that ends with one
    ("Итоговая оценка: 2", "рассуждение", SCALE, 2.0, "рассуждение"),
    ("**Оценка**\n\n1\n", None, SCALE, 1.0, ""),
    # line 171 / 174 ("-?"): a negative integer, the pairwise "answer 1 is better"
    ("-1", "Ответ 1 точнее.", PAIRWISE, -1.0, "Ответ 1 точнее."),
    ("Лучше первый: -1", None, PAIRWISE, -1.0, ""),
    # int() accepts surrounding whitespace and a plus sign (line 171)
    ("  +1 ", None, SCALE, 1.0, ""),
]


@pytest.mark.parametrize("content, reasoning, scale, score, feedback", PARSED)
def test_integer_verdicts_pollux_client_reads_are_read(content, reasoning, scale, score, feedback):
    """Every answer POLLUX's client turns into a score gives the same score here, with the reasoning as feedback."""
    verdict = parse_integer_verdict(content, reasoning, scale)
    assert (verdict.ok, verdict.score, verdict.feedback, verdict.in_scale) == (True, score, feedback, True)


# (content, separated reasoning, expected error code)
FAILED = [
    # lines 178-180: no integer at the end -> parse error (POLLUX: score None)
    ("Оценка — два.", "думаю", VerdictError.NO_SCORE),
    ("2 балла", None, VerdictError.NO_SCORE),
    # an integer on the first line, then text: MERA's Pollux-4B-Judge task reads its first line, 2
    # (pollux_human_centric/utils.py parse_judge_score; docs/fidelity.md), POLLUX's client no integer at the end
    ("2\n\nПояснение: ответ верный.", None, VerdictError.NO_SCORE),
    # beyond the client: an answer cut inside its reasoning is a counted failure, never a score. vLLM's qwen3
    # reasoning parser returns a generation cut before </think> as all reasoning and no content ...
    (None, "Сначала проверю факты. Ответ содержит 2 ошибки и", VerdictError.UNCLOSED_THINK),
    ("", "Оценка 2", VerdictError.UNCLOSED_THINK),
    # ... and a server without the parser returns the open block inline (the client would read its trailing "1")
    ("<think>\nПроверяю пункт 1", None, VerdictError.UNCLOSED_THINK),
    # the empty answer
    ("", None, VerdictError.EMPTY),
    (None, None, VerdictError.EMPTY),
    # deliberate deviation (named in judge/verdicts.py): the tail of a decimal is not an integer; POLLUX's regex
    # would read "1.5" as 5
    ("1.5", None, VerdictError.NO_SCORE),
]


def test_a_reasoning_closed_with_nothing_after_it_is_empty_not_unclosed():
    """A judge that closed its reasoning and wrote nothing after it was not cut inside its reasoning (a cut leaves no
    </think>): the answer is empty, and unclosed_think would send a caller to raise max_tokens for nothing. Inline,
    or closed by a template that opened the block in the prompt; the reasoning is kept as feedback. Reasoning apart
    with no answer stays unclosed_think here, where no finish_reason says whether the output was cut (vLLM's reasoning
    parser returns a cut that way; ``read_served_verdict`` reads the finish_reason, next test)."""
    for content in ("<think>\nОшибок нет, всё исправлено.\n</think>\n\n", "Ошибок нет, всё исправлено.</think>  "):
        verdict = parse_integer_verdict(content, None, SCALE)
        assert (verdict.ok, verdict.score, verdict.error, verdict.feedback) == (
            False, None, VerdictError.EMPTY, "Ошибок нет, всё исправлено.")
        assert verdict.reason == "the reasoning closed with no answer after it"
    assert parse_integer_verdict("", "Ошибок нет.", SCALE).error == VerdictError.UNCLOSED_THINK
    assert parse_integer_verdict("<think>\nОшибок нет.", None, SCALE).error == VerdictError.UNCLOSED_THINK


def test_a_served_reasoning_that_stopped_with_no_integer_is_empty_inline_or_apart():
    """Pollux-4B-Judge closing its reasoning and ending its turn with no integer (finish_reason "stop") reads alike
    whether the server returned the reasoning inline or apart (vLLM's reasoning parser: content None): empty, the
    reasoning kept as feedback. Apart, any other finish_reason still gets unclosed_think: "length" (how a parser
    returns an output cut inside its reasoning), None or "" (not reported), "content_filter", "abort" or
    "tool_calls" (the judge did not end its turn, as train.synthetic.traces reads them)."""
    from judge.verdicts import read_served_verdict

    inline = read_served_verdict("integer", "<think>\nОшибок нет.\n</think>\n", scale=SCALE, finish_reason="stop")
    for content in (None, "", "  \n"):
        apart = read_served_verdict("integer", content, reasoning="Ошибок нет.\n", scale=SCALE, finish_reason="stop")
        assert (apart.ok, apart.score, apart.error, apart.feedback) == (False, None, VerdictError.EMPTY, "Ошибок нет.")
        assert apart.reason == "the judge ended its turn (finish_reason stop) with no answer after its reasoning"
    assert (inline.ok, inline.error, inline.feedback) == (False, VerdictError.EMPTY, "Ошибок нет.")
    for finish_reason in ("length", None, "", "content_filter", "abort", "tool_calls"):
        cut = read_served_verdict("integer", None, reasoning="Ошибок нет.", scale=SCALE, finish_reason=finish_reason)
        assert (cut.ok, cut.error, cut.feedback) == (False, VerdictError.UNCLOSED_THINK, "Ошибок нет.")
    # an answer beside the reasoning is read as before; a tagged judge's reasoning is not its answer
    assert read_served_verdict("integer", "2", reasoning="Ошибок нет.", scale=SCALE, finish_reason="stop").score == 2.0
    assert read_served_verdict("tagged", None, reasoning="Ошибок нет.", finish_reason="stop").error == VerdictError.EMPTY


@pytest.mark.parametrize("content, reasoning, error", FAILED)
def test_integer_verdicts_that_fail_are_counted_failures(content, reasoning, error):
    """Outputs without a readable integer fail with a stable code and no score; reasoning read so far is kept."""
    verdict = parse_integer_verdict(content, reasoning, SCALE)
    assert (verdict.ok, verdict.score, verdict.error) == (False, None, error)
    assert verdict.reason
    if reasoning:
        assert verdict.feedback == reasoning.strip()


@pytest.mark.parametrize("content, score", [
    ("<think>A</think>1<think>B</think>2", 2.0),  # POLLUX's client joins "1" and "2": 12, out of scale, an MAE of 10
    ("<think>A</think>1<think>B</think>0", 0.0),
    ("<think>A</think>-<think>B</think>1", None),  # a sign spaced from its digits, as "- 1": no sign guessed
    ("<think>A</think>Оценка:<think>B</think>2", 2.0),
    ("<think>A</think><think>B</think>1", 1.0),
])
def test_a_removed_think_block_keeps_the_answers_on_either_side_apart(content, score):
    """The integer read is one the judge wrote: a reasoning block between two answers ("1", then more reasoning,
    then "2") separates them, and the answer that ends the output, after the last reasoning, is read. POLLUX's
    client removes the blocks by joining what was around them and read 12 (a deviation named in docs/fidelity.md)."""
    verdict = parse_integer_verdict(content, None, SCALE)
    assert (verdict.score, verdict.error) == (score, None if score is not None else VerdictError.NO_SCORE)
    assert verdict.feedback == "A"


# (answer, score on the pairwise -1/0/1 scale and on 0..2, None: a no_score failure). POLLUX's r"(-?\d+)\s*$" sees
# only an attached ASCII hyphen, so each of these read as +1: "answer 2 is better" where the judge wrote "answer 1".
MINUS_LIKE = [
    ("−1", -1.0),  # U+2212, the minus sign and nothing else: read as the sign it is
    ("Итог: −1", -1.0),
    ("–1", None),  # U+2013 en dash: a dash, not a sign
    ("—1", None),  # U+2014 em dash
    ("- 1", None),  # a hyphen spaced from the digits: a minus, or a list bullet
    ("− 1", None),  # even the minus sign, spaced
    ("Итог — 1", None),  # in Russian a spaced dash also says "is": "the result is 1"
    ("Итог: –1", None),
    ("1-2", None),  # a hyphen after a digit: a range or a subtraction (this parser read 2, POLLUX's regex -2)
    ("1--1", None),  # a doubled minus after a digit: a subtraction of -1, or a dash; it read -1
    ("1-−1", None),  # a hyphen, then U+2212: the same; it read -1
    ("1.--1", None),
    ("−−1", None),  # U+2212 twice
]


@pytest.mark.parametrize("scale", [PAIRWISE, SCALE], ids=["pairwise -1..1", "pointwise 0..2"])
@pytest.mark.parametrize("content, score", MINUS_LIKE, ids=[c for c, _ in MINUS_LIKE])
def test_a_number_after_a_minus_like_character_is_never_read_positive(content, score, scale):
    """A verdict never loses its minus sign: after U+2212 it reads negative (on 0..2 that is a score outside the scale,
    read and flagged as a plain "-1" is); after a dash, a spaced minus or a minus following a digit it is a counted
    no_score failure, on either scale."""
    verdict = parse_integer_verdict(content, "рассуждение", scale)
    if score is None:
        assert (verdict.ok, verdict.score, verdict.error, verdict.feedback) == (False, None, VerdictError.NO_SCORE,
                                                                                "рассуждение")
        assert "no sign to read" in verdict.reason
    else:
        assert (verdict.ok, verdict.score, verdict.in_scale) == (True, score, scale.contains(score))
        assert verdict.in_scale is (scale is PAIRWISE)


@pytest.mark.parametrize("content, score", MINUS_LIKE, ids=[c for c, _ in MINUS_LIKE])
def test_pairwise_readers_keep_the_minus_sign(content, score):
    """judge-eval's pairwise reader and judge-serve's score reading (both through parse_judge_output) give -1 or no
    verdict for each answer above, never 1."""
    from eval.pairwise.judging import _outcome
    from serve.jobs import PAIRWISE_SCALE
    from serve.score_reading import seq2seq_verdict

    row = _outcome(content, "рассуждение", VerdictFormat.INTEGER, False)
    assert (row["parse_ok"], row["score"]) == (score is not None, score)
    served = seq2seq_verdict(f"<think>рассуждение</think>{content}", None, PAIRWISE_SCALE, False, VerdictFormat.INTEGER)
    assert (served["parse_ok"], served["score"]) == (score is not None, score)


def test_integer_verdict_outside_the_scale_is_read_and_flagged():
    """An integer outside the rubric's scale is the judge's answer (scored as the paper does), flagged in_scale
    False, exactly as a tagged verdict is."""
    verdict = parse_integer_verdict("5", "r", SCALE)
    assert (verdict.ok, verdict.score, verdict.in_scale) == (True, 5.0, False)
    assert verdict.reason == "score 5 is outside the scale 0..2"
    assert parse_integer_verdict("-1", None, SCALE).in_scale is False


def test_think_closed_by_the_prompt_splits_reasoning_from_the_answer():
    """A template that opens <think> in the prompt leaves only its close in the output: what precedes it is the
    reasoning, the integer after it the score."""
    verdict = parse_integer_verdict("рассуждаю\n</think>\n\n2", None, SCALE)
    assert (verdict.score, verdict.feedback) == (2.0, "рассуждаю")


@pytest.mark.parametrize("text, split", [
    ("2", (None, "2")),  # no reasoning closed: all of it is the answer
    ("<think>open", (None, "<think>open")),  # an open tag alone closes nothing
    ("a</ think>1", (None, "a</ think>1")),  # a space after the slash is no close tag
    ("рассуждаю\n</think>\n\n2", ("рассуждаю\n", "\n\n2")),  # whitespace either side kept, not stripped
    ("a</THINK >1", ("a", "1")),  # any case, spaces before the ">"
    ("a</think>b</think> 2 ", ("a</think>b", " 2 ")),  # the last close, not the first
    ("<think>A</think>B<think>C</think>D", ("<think>A</think>B<think>C", "D")),  # several blocks: after the last
    ("a</think>", ("a", "")),  # nothing after the close
], ids=["none", "open only", "not a close", "whitespace", "spelling", "two closes", "two blocks", "empty after"])
def test_split_at_last_think_close_cuts_at_the_last_close(text, split):
    """judge.verdicts.split_at_last_think_close: (before, after) the last </think>, unstripped; (None, text) without
    one. The integer reader and judge-eval's quote of an answer both cut there."""
    from judge.verdicts import split_at_last_think_close

    assert split_at_last_think_close(text) == split


def test_the_integer_reader_reads_after_the_last_close_a_prompt_opened_reasoning_wrote():
    """A reasoning the prompt opened that quotes a close tag of its own: the reasoning runs to the last </think>, as
    ``split_at_last_think_close`` cuts it, and the answer is what follows."""
    verdict = parse_integer_verdict("тег </think> в ответе\n</think>\n 1 ", None, SCALE)
    assert (verdict.score, verdict.feedback) == (1.0, "тег </think> в ответе")


def test_parse_judge_output_dispatches_by_format():
    """The two formats read the same text differently: a tagged verdict is not an integer answer and vice versa."""
    tagged = "[FEEDBACK] ok [RESULT] 1 [END]"
    assert judge.parse_judge_output("tagged", tagged, scale=SCALE).score == 1.0
    assert judge.parse_judge_output("integer", tagged, scale=SCALE).error == VerdictError.NO_SCORE
    assert judge.parse_judge_output("tagged", "2", scale=SCALE).error == VerdictError.NO_RESULT
    with pytest.raises(ValueError, match="verdict_format: 'bare'"):
        judge.parse_judge_output("bare", "2")


@pytest.mark.parametrize("model_id, expected", [
    ("ai-forever/Pollux-4B-Judge", "integer"),
    ("Pollux-4B-Judge", "integer"),
    ("/models/pollux-4b-judge/", "integer"),
    ("ai-forever/pollux-judge-7b", "tagged"),
    ("ai-forever/pollux-judge-32b-r", "tagged"),
    ("tiny-judge", "tagged"),
    ("", "tagged"),
])  # fmt: skip
def test_verdict_format_follows_the_model_id(model_id, expected):
    """The served model id Pollux-4B-Judge (any owner, case or local folder) means integer; every other judge tagged."""
    assert verdict_format_of_model(model_id) == expected


def test_checkpoint_verdict_format_reads_manifest_then_ids(tmp_path):
    """A checkpoint's format: an export manifest decides (its verdict_format, else tagged: judge-train's exports are
    tagged even when fine-tuned from the 4B judge); without one its ids (served name, config.json's _name_or_path,
    folder, hub-cache repository folder), then its model_type (qwen3: the 4B), else tagged; an unknown manifest
    value is refused."""
    from judge.checkpoints import EXPORT_MANIFEST, checkpoint_verdict_format

    plain = tmp_path / "judge-a"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    assert checkpoint_verdict_format(plain) == VerdictFormat.TAGGED
    assert checkpoint_verdict_format(plain, "ai-forever/Pollux-4B-Judge") == VerdictFormat.INTEGER
    (plain / "config.json").write_text(json.dumps({"_name_or_path": "ai-forever/Pollux-4B-Judge"}))
    assert checkpoint_verdict_format(plain) == VerdictFormat.INTEGER
    (plain / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq"}))  # judge-train's export of a 4B fine-tune
    assert checkpoint_verdict_format(plain, "Pollux-4B-Judge") == VerdictFormat.TAGGED
    (plain / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq", "verdict_format": "integer"}))
    assert checkpoint_verdict_format(plain) == VerdictFormat.INTEGER
    (plain / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq", "verdict_format": "bare"}))
    with pytest.raises(ValueError, match="verdict_format 'bare'"):
        checkpoint_verdict_format(plain)

    snapshot = tmp_path / "hub" / "models--ai-forever--Pollux-4B-Judge" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert checkpoint_verdict_format(snapshot) == VerdictFormat.INTEGER


@pytest.mark.parametrize("folder, config, served, expected, why", [
    ("pollux-4b", {"model_type": "qwen3", "_name_or_path": "/mnt/ckpt/sft-final"}, "judge", "integer",
     "folder 'pollux-4b' names Pollux-4B-Judge"),
    ("Pollux-4B-Judge-AWQ", {"model_type": "qwen3", "_name_or_path": "/mnt/ckpt/sft-final"}, "judge", "integer",
     "folder 'Pollux-4B-Judge-AWQ' names Pollux-4B-Judge"),
    ("sft-final", {"model_type": "qwen3", "_name_or_path": "/mnt/ckpt/sft-final"}, "judge", "integer",
     "no export manifest and model_type qwen3"),
    ("ckpt", {"model_type": "qwen2", "_name_or_path": "/data/pollux_4b"}, "judge", "integer",
     "config.json _name_or_path '/data/pollux_4b' names Pollux-4B-Judge"),
    ("ckpt", {"model_type": "qwen2"}, "my-Pollux-4B-Judge-int8", "integer",
     "served name 'my-Pollux-4B-Judge-int8' names Pollux-4B-Judge"),
    ("pollux-judge-7b", {"model_type": "qwen2", "_name_or_path": "t-tech/T-lite-it-1.0"}, "judge", "tagged",
     "model_type 'qwen2': the 7B/32B judges' format"),
])  # fmt: skip
def test_a_renamed_4b_without_a_manifest_is_integer_and_the_reason_is_given(tmp_path, folder, config, served,
                                                                            expected, why):
    """Pollux-4B-Judge's copies under other names (pollux-4b/, Pollux-4B-Judge-AWQ/, a fine-tune folder whose
    _name_or_path is /mnt/ckpt/sft-final) are integer: any id naming pollux-4b, or, naming none, a Qwen3 checkpoint
    without judge-train's manifest (the released Qwen3 POLLUX judge is the 4B); a Qwen2 folder naming none is tagged.
    (Before: only an id exactly pollux-4b-judge was integer, and each of these served as tagged, thinking off.)"""
    from judge.checkpoints import checkpoint_verdict_format

    root = tmp_path / folder
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    assert checkpoint_verdict_format(root, served) == expected
    from judge.checkpoints import verdict_format_and_why

    fmt, reason = verdict_format_and_why(root, served)
    assert fmt == expected and why in reason


def test_judge_train_exports_carry_a_manifest_so_the_qwen3_rule_reads_released_checkpoints_only(tmp_path):
    """Every export train/export.py writes holds pollux_judge.json, whose verdict_format decides before any id or
    model_type: a tagged Qwen3 export (thinking off) stays tagged though it is a Qwen3 checkpoint."""
    import inspect

    from judge.checkpoints import EXPORT_MANIFEST, verdict_format_and_why
    from train import export

    for writer in (export.export_seq2seq, export.export_regression):
        assert "write_manifest(out," in inspect.getsource(writer), writer.__name__
    tagged = tmp_path / "qwen3-tagged-export"
    tagged.mkdir()
    (tagged / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    (tagged / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq", "verdict_format": "tagged"}))
    assert verdict_format_and_why(tagged, "Pollux-4B-Judge") == ("tagged", f"its export manifest {EXPORT_MANIFEST} "
                                                                            "says tagged")


def test_judge_serve_logs_the_verdict_format_it_chose_and_why(tmp_path, caplog):
    """judge-serve says at start-up which verdict format it chose and why, for auto and for a set format alike."""
    import logging

    from serve.app import resolved_verdict_format
    from serve.config import ServeConfig
    from serve.layout import CheckpointLayout

    root = tmp_path / "sft-final"
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    layout = CheckpointLayout(kind="seq2seq", root=root, generator_dir=root)
    with caplog.at_level(logging.INFO, logger="judge_serve"):
        chosen = resolved_verdict_format(ServeConfig(model=str(root), served_model_name="j"), layout)
        assert chosen.verdict_format == "integer"
        resolved_verdict_format(ServeConfig(model=str(root), served_model_name="j", verdict_format="tagged"), layout)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("verdict format")]
    assert said == [f"verdict format integer for {root} (no export manifest and model_type qwen3: the released Qwen3 "
                    "POLLUX judge is Pollux-4B-Judge (judge-train's exports carry a manifest))",
                    f"verdict format tagged for {root} (verdict_format is set)"]


def _native_4b(instruction: str, reference: str, answer: str, criterion: str, rubrics: str) -> str:
    """Pollux-4B-Judge's own pointwise prompt over the fields, written out as its clients' template reads:
    ai-forever/POLLUX demo/serve_pollux_demo.py lines 24-38 ("Original Pollux prompt (Russian headers, model's native
    format)", commented out: "# " removed, a bare "#" blank, the closing quotes on line 38) and MERA-Evaluation/MERA
    benchmark_tasks/pollux_human_centric/utils.py (POLLUX_JUDGE_PROMPT, the Pollux-4B-Judge task)."""
    return (
        "### Задание для оценки:\n"  # line 24, after 'POINTWISE_TEMPLATE = """'
        f"{instruction}\n"  # 25 {instruction}
        "\n"  # 26
        "### Эталонный ответ:\n"  # 27
        f"{reference}\n"  # 28 {reference_answer}
        "\n"  # 29
        "### Ответ для оценки:\n"  # 30
        f"{answer}\n"  # 31 {answer}
        "\n"  # 32
        "### Критерий оценки:\n"  # 33
        f"{criterion}\n"  # 34 {criteria_name}
        "\n"  # 35
        "### Шкала оценивания по критерию:\n"  # 36
        f"{rubrics}\n"  # 37 {criteria_rubrics}, then the closing quotes on line 38
    )


def test_the_4b_native_pointwise_prompt_is_the_russian_prompt_and_one_newline():
    """Pollux-4B-Judge's own clients end the Russian prompt in a newline after the rubric (``_native_4b``);
    judge.render_prompt (prompts/test_pollux.txt, the 7B/32B judges' and judge-train's exports') has no such newline.
    The 4B is asked with its own: judge.prompts.POLLUX_4B_PROMPT renders it byte for byte."""
    native_4b = _native_4b("INSTR", "REF", "ANS", "CRIT", "RUBRICS")
    fields = {"instruction": "INSTR", "reference_answer": "REF", "answer": "ANS", "criteria_name": "CRIT",
              "rubrics": "RUBRICS"}
    assert judge.render_prompt(fields) + "\n" == native_4b
    assert judge.prompts.POLLUX_4B_PROMPT.render(fields) == native_4b
    assert judge.prompts.POLLUX_4B_PROMPT.version == "pollux-ru-4b-v1"


#: An export manifest as train/export.py writes it for an integer-format judge (judge.checkpoints.write_manifest).
INTEGER_EXPORT = {"mode": "seq2seq", "prompt_version": "pollux-ru-v2", "generator": ".", "score_head": None,
                  "verdict_format": "integer"}
#: (folder, config.json, manifest, served name): the released 4B by its folder, a renamed 4B copy (Qwen3, no
#: manifest), an integer export of judge-train fine-tuned from the 4B (its _name_or_path names it), the 7B release.
CHECKPOINTS = {
    "released-4b": ("Pollux-4B-Judge", {"model_type": "qwen3"}, None, "judge"),
    "renamed-4b": ("sft-final", {"model_type": "qwen3"}, None, "judge"),
    "integer-export": ("my-judge", {"model_type": "qwen3", "_name_or_path": "ai-forever/Pollux-4B-Judge"},
                       INTEGER_EXPORT, "Pollux-4B-Judge"),
    "7b": ("pollux-judge-7b", {"model_type": "qwen2"}, None, "judge"),
}


@pytest.mark.parametrize(("checkpoint", "verdict_format", "version", "newline"), [
    ("released-4b", "integer", "pollux-ru-4b-v1", True), ("renamed-4b", "integer", "pollux-ru-4b-v1", True),
    ("integer-export", "integer", "pollux-ru-v2", False), ("7b", "tagged", "pollux-ru-v2", False),
])  # fmt: skip
def test_judge_serves_jobs_ask_a_released_4b_with_its_native_prompt_and_others_with_theirs(
        tmp_path, qwen3_tokenizer, checkpoint, verdict_format, version, newline):
    """A released 4B (an integer-format checkpoint without an export manifest) is asked with its own prompt through
    judge-serve's build_jobs, byte for byte as POLLUX's demo writes it, in the Qwen3 chat template with thinking on;
    an export keeps the template its manifest names (pollux-ru-v2, without the newline), and the 7B/32B releases the
    POLLUX prompt. The choice is judge.checkpoints.prompt_template_and_why, from the checkpoint's format and manifest."""
    from judge.checkpoints import EXPORT_MANIFEST, prompt_template_and_why, read_manifest, verdict_format_and_why
    from judge.wire import JudgeRequest
    from serve.jobs import build_jobs

    name, config, manifest, served = CHECKPOINTS[checkpoint]
    root = tmp_path / name
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    if manifest is not None:
        (root / EXPORT_MANIFEST).write_text(json.dumps(manifest))
    fmt, _ = verdict_format_and_why(root, served)
    template, _ = prompt_template_and_why(fmt, read_manifest(root))
    assert (fmt, template.version) == (verdict_format, version)
    criterion = {"name": "Грамотность", "rubrics": "0: ошибки\n\n1: без ошибок"}
    request = JudgeRequest.model_validate({"items": [{"instruction": "Напиши стих.", "answer": "Роза красная.\n",
                                                      "reference_answer": "Эталон", "criteria": [criterion]}]})
    integer = fmt == "integer"
    (job,) = build_jobs(request, qwen3_tokenizer, max_model_len=4096, max_tokens=512, thinking=integer,
                        template=template)
    native = _native_4b("Напиши стих.", "Эталон", "Роза красная.\n", "Грамотность", "0: ошибки\n\n1: без ошибок")
    assert job.prompt == (native if newline else native[:-1])
    thinking_off = "" if integer else "<think>\n\n</think>\n\n"
    chat = f"<|im_start|>user\n{job.prompt}<|im_end|>\n<|im_start|>assistant\n{thinking_off}"
    assert job.prompt_ids == qwen3_tokenizer(chat, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize(("manifest", "version", "newline"), [(None, "pollux-ru-4b-v1", True),
                                                             (INTEGER_EXPORT, "pollux-ru-v2", False)],
                         ids=["released-4b", "integer-export"])
def test_judge_serve_asks_a_released_4b_with_its_native_prompt_on_judge_and_get_reward(
        tiny_causal_dir, tmp_path, monkeypatch, manifest, version, newline):
    """judge-serve (the app, in front of a scripted engine) serving Pollux-4B-Judge (no export manifest) sends the
    engine the 4B's own prompt, byte for byte as POLLUX's demo writes it, on /v1/judge and on /get_reward alike, and
    says pollux-ru-4b-v1 wherever it names its prompt (each response, GET /v1/models, run.json); an integer export
    served under the same name keeps the prompt its manifest names, pollux-ru-v2, without the newline."""
    import shutil

    from fastapi.testclient import TestClient

    from judge.checkpoints import EXPORT_MANIFEST
    from serve.app import create_app
    from serve.config import ServeConfig
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from tests.support.serve_in_process import await_bring_up

    root = tmp_path / "ckpt"
    shutil.copytree(tiny_causal_dir, root, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    if manifest is not None:
        (root / EXPORT_MANIFEST).write_text(json.dumps(manifest))

    def respond_get(path: str) -> tuple:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "Pollux-4B-Judge", "object": "model", "max_model_len": 2048}]}
        return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})

    def completions(path: str, body: dict) -> tuple:  # the 4B's answer: its reasoning, then the integer
        return 200, {"choices": [{"text": "<think>\nБез ошибок.\n</think>\n\n1", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    criterion = {"name": "Грамотность", "rubrics": "0: ошибки\n\n1: без ошибок"}
    label = {"instruction": "Напиши стих о весне.", "reference_answer": "Эталон", "criteria": [criterion]}
    policy_prompt = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
    auth = {"Authorization": "Bearer k"}
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(completions, respond_get=respond_get) as engine:
        config = ServeConfig(model=str(root), served_model_name="Pollux-4B-Judge", generator_url=engine.url,
                             max_model_len=2048, max_tokens=128, api_key="k", log_dir=str(tmp_path / "logs")).validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            assert http.get("/ready").status_code == 200, http.get("/health").text
            judged = http.post("/v1/judge", headers=auth, json={"items": [{**label, "answer": "Весна пришла."}]})
            rewarded = http.post("/get_reward", headers=auth, json={
                "query": [policy_prompt + "Весна пришла.<|im_end|>"], "prompts": [policy_prompt], "labels": [label]})
            (entry,) = http.get("/v1/models", headers=auth).json()["data"]
            tokenizer = http.app.state.serve.judge.tokenizer
    assert judged.status_code == 200, judged.text
    assert judged.json()["prompt_version"] == version and judged.json()["verdict_format"] == "integer"
    assert judged.json()["items"][0]["results"][0]["score"] == 1
    assert rewarded.status_code == 200 and rewarded.json()["rewards"] == [1.0], rewarded.text
    native = _native_4b("Напиши стих о весне.", "Эталон", "Весна пришла.", "Грамотность", "0: ошибки\n\n1: без ошибок")
    prompt = native if newline else native[:-1]
    chat = f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"  # ChatML, thinking on (no empty block)
    sent = [body["prompt"] for body in engine.bodies("/v1/completions")]
    assert sent == [tokenizer(chat, add_special_tokens=False)["input_ids"]] * 2  # /v1/judge's, then /get_reward's
    assert tokenizer.decode(sent[0]) == chat
    assert entry["prompt_version"] == version
    assert json.loads((tmp_path / "logs" / "run.json").read_text(encoding="utf-8"))["prompt_version"] == version


# ---- judge-eval run against a server answering as `vllm serve ai-forever/Pollux-4B-Judge --reasoning-parser qwen3`

HUB_ID = "ai-forever/Pollux-4B-Judge"
#: The sampling fields every request to a POLLUX judge states, so that vLLM takes none from generation_config.json.
NEUTRAL = {"repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0, "top_p": 1.0, "top_k": -1,
           "min_p": 0.0}


def _reasoning_reply(content: str | None, reasoning: str | None, finish_reason: str = "stop") -> dict:
    """A vLLM 0.32 chat.completion from a server started with --reasoning-parser qwen3: the reasoning in
    ``message.reasoning`` (vllm/entrypoints/openai/chat_completion/protocol.py, ``ChatMessage.reasoning``), the
    answer in ``content``; a generation cut before ``</think>`` is all reasoning with content null."""
    from tests.support.scripted_endpoint import chat_completion

    reply = chat_completion(content, HUB_ID, finish_reason)
    reply["choices"][0]["message"]["reasoning"] = reasoning
    return reply


def test_judge_eval_run_reads_every_pollux_4b_verdict_with_no_extra_flag(tmp_path):
    """`judge-eval run --judge URL --model ai-forever/Pollux-4B-Judge` picks the integer format from the model id:
    each request is the 4B's own prompt (byte for byte as POLLUX's demo writes it: the POLLUX prompt and one newline)
    with thinking left on (no chat_template_kwargs), 1024 new tokens and the sampling fields stated neutral; every
    answer is read, its reasoning kept as feedback; a reply cut inside its reasoning is a counted failure; run.json
    and metrics.json name the prompt pollux-ru-4b-v1."""
    from eval.cli import main
    from eval.judging.predictions import read_predictions
    from tests.support.scripted_endpoint import ScriptedEndpoint

    records = judge.load_records(judge.sample_data_path())[:8]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    scores = {r.id: judge.scale_of(r.rubrics).max for r in records}
    native = {r.id: _native_4b(r.instruction, r.reference_answer or "", r.answer, r.criteria_name, r.rubrics)
              for r in records}
    prompt_of = {native[r.id]: r for r in records}
    cut = records[-1].id

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}  # vLLM has no /v1/judge: the chat backend is chosen
        record = prompt_of[body["messages"][0]["content"]]
        if record.id == cut:
            return 200, _reasoning_reply(None, "Проверяю ответ по шкале и", "length")
        return 200, _reasoning_reply(str(int(scores[record.id])), f"Рассуждение о {record.id}.")

    with ScriptedEndpoint(respond, model=HUB_ID) as server:
        argv = ["run", "--judge", server.base_url, "--model", HUB_ID, "--data", str(data), "--out", str(tmp_path / "run"),
                "--no-progress"]
        assert main(argv) == 0
    sent = sorted(server.bodies("/v1/chat/completions"), key=lambda b: b["messages"][0]["content"])
    assert sent == sorted(({"model": HUB_ID, "messages": [{"role": "user", "content": native[r.id]}],
                            "max_tokens": 1024, "temperature": 0.0, **NEUTRAL} for r in records),
                          key=lambda b: b["messages"][0]["content"])  # fmt: skip
    rows = {row["id"]: row for row in read_predictions(tmp_path / "run")}
    assert set(rows) == set(scores)
    for record in records[:-1]:
        row = rows[record.id]
        assert (row["parse_ok"], row["score"], row["in_scale"]) == (True, scores[record.id], True)
        assert row["feedback"] == f"Рассуждение о {record.id}." and row["score_source"] == "verdict"
    assert (rows[cut]["parse_ok"], rows[cut]["score"], rows[cut]["error"]) == (False, None, "unclosed_think")
    assert rows[cut]["feedback"] == "Проверяю ответ по шкале и"
    run_info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert run_info["config"]["verdict_format"] == "integer" and run_info["prompt_version"] == "pollux-ru-4b-v1"
    # Scored: POLLUX's repository evaluator reads "[RESULT] n" tags, which this judge never writes; it would report
    # every output unscored (format_acc 0) under POLLUX's name, so it is left out and the report says why.
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "0", "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    assert "pollux_official" not in metrics and metrics["run"]["verdict_format"] == "integer"
    assert metrics["run"]["prompt_version"] == "pollux-ru-4b-v1"
    assert metrics["splits"]["all"]["overall"]["n_failed"] == 1
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    said = "Not computed: it reads the score after a `[RESULT]` tag; this judge answers with a bare integer"
    assert said in report
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")  # the page says it too, not silence
    assert '<h2 id="pollux">POLLUX repository evaluator' in page and "this judge answers with a bare integer" in page


def test_judge_eval_through_judge_serve_records_the_prompt_judge_serve_says_it_renders(tmp_path):
    """Through judge-serve's /v1/judge the server renders the prompts: judge-eval's run.json records the prompt
    version judge-serve's GET /v1/models entry names (pollux-ru-4b-v1 for a released 4B it serves under any name),
    not the one its own rule would give a model id naming no 4B (pollux-ru-v2)."""
    from eval.cli import main
    from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage
    from tests.support.scripted_endpoint import ScriptedEndpoint

    record = judge.load_records(judge.sample_data_path())[0]
    data = judge.write_jsonl([record], tmp_path / "data.jsonl")

    def respond(path: str, body: dict) -> tuple:
        if not body:  # the backend probe: judge-serve answers an empty body 400
            return 400, {"error": {"message": "items: required field is missing"}}
        results = [judge.JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                                     score_source="verdict", output="1") for c in body["items"][0]["criteria"]]
        return 200, JudgeResponse("judge-1", "judge.result", 0, "judge", "seq2seq", "integer", "pollux-ru-4b-v1",
                                  [JudgeResponseItem(0, record.id, results)],
                                  JudgeResponseUsage(len(results), len(results), 0, 0, 0)).to_json()

    def respond_get(path: str) -> tuple:
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 4096,
                                                 "judge_max_tokens": 1024, "prompt_version": "pollux-ru-4b-v1",
                                                 "verdict_format": "integer"}]}

    with ScriptedEndpoint(respond, respond_get=respond_get) as server:
        assert main(["run", "--judge", server.base_url, "--data", str(data), "--out", str(tmp_path / "run"),
                     "--no-progress"]) == 0
    run_info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert (run_info["backend"], run_info["prompt_version"]) == ("judge-serve", "pollux-ru-4b-v1")


def test_explicit_tagged_format_overrides_the_model_id(tmp_path):
    """--verdict-format tagged wins over the id: the request switches thinking off, asks with the POLLUX prompt (the
    7B/32B judges', no trailing newline; run.json says pollux-ru-v2), and a bare integer is no verdict."""
    from eval.cli import main
    from eval.judging.predictions import read_predictions
    from tests.support.scripted_endpoint import ScriptedEndpoint

    record = judge.load_records(judge.sample_data_path())[0]
    data = judge.write_jsonl([record], tmp_path / "data.jsonl")
    with ScriptedEndpoint(lambda path, body: (200, _reasoning_reply("1", "r")) if path.endswith("completions")
                          else (404, {}), model=HUB_ID) as server:  # fmt: skip
        assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", str(data), "--out",
                     str(tmp_path / "run"), "--no-progress", "--verdict-format", "tagged"]) == 0
    (body,) = server.bodies("/v1/chat/completions")
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["messages"] == [{"role": "user", "content": judge.render_prompt(record)}]
    assert json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["prompt_version"] == "pollux-ru-v2"
    (row,) = read_predictions(tmp_path / "run")
    assert (row["parse_ok"], row["error"]) == (False, "no_result")


@pytest.mark.parametrize("fmt", ["tagged", "integer"])
def test_engine_command_follows_the_verdict_format(fmt, tmp_path):
    """The generating engine of an integer judge runs as its authors serve it (--reasoning-parser qwen3, thinking left
    on); a tagged judge's gets thinking off by default and no reasoning parser. Either serves GET /tokenizer_info,
    which judge-serve passes through (before: the integer judge's engine lacked it, and the route answered 404);
    a pooling engine, to which the route never goes, does not."""
    from serve.config import ServeConfig
    from serve.launch import EngineSpec, engine_command

    config = ServeConfig(model=str(tmp_path), verdict_format=fmt).validate()
    cmd = engine_command(EngineSpec("generator", tmp_path, "j", 0.9), config, 1234)
    assert cmd.count("--enable-tokenizer-info-endpoint") == 1
    pooler = engine_command(EngineSpec("pooler", tmp_path, "j", 0.3), config, 1235)
    assert "--enable-tokenizer-info-endpoint" not in pooler
    assert ("--reasoning-parser" in cmd) == (fmt == "integer")
    assert ("--default-chat-template-kwargs" in cmd) == (fmt == "tagged")
    if fmt == "integer":
        assert cmd[cmd.index("--reasoning-parser") + 1] == "qwen3"


def test_serve_resolves_the_format_from_the_layout(tmp_path):
    """judge-serve's auto: a seq2seq folder named Pollux-4B-Judge is integer, another tagged; integer asked of a
    regression judge is refused; an unknown setting is a config error naming verdict_format."""
    from judge.plumbing.config_files import ConfigError
    from serve.app import resolved_verdict_format
    from serve.config import ServeConfig
    from serve.layout import CheckpointLayout, LayoutError

    four_b = tmp_path / "Pollux-4B-Judge"
    four_b.mkdir()
    (four_b / "config.json").write_text("{}")
    seq = CheckpointLayout(kind="seq2seq", root=four_b, generator_dir=four_b)
    assert resolved_verdict_format(ServeConfig(model=str(four_b)), seq).verdict_format == "integer"
    other = CheckpointLayout(kind="seq2seq", root=tmp_path, generator_dir=tmp_path)
    assert resolved_verdict_format(ServeConfig(model=str(tmp_path), served_model_name="j"), other).verdict_format == "tagged"
    regression = CheckpointLayout(kind="regression", root=four_b, generator_dir=four_b, pooler_dir=four_b)
    with pytest.raises(LayoutError, match="verdict_format: integer"):
        resolved_verdict_format(ServeConfig(model=str(four_b), verdict_format="integer"), regression)
    with pytest.raises(ConfigError, match="verdict_format: 'bare'"):
        ServeConfig(model=str(four_b), verdict_format="bare").validate()


@pytest.mark.parametrize("content", ["Оценка: " + "9" * 400, "Оценка: " + "9" * 5_000, "9" * 400, "-" + "9" * 5_000,
                                     "Итог: " + "9" * 1_000_000],
                         ids=["400 digits", "5,000 digits", "400 digits alone", "-5,000 digits", "a million digits"])
def test_an_integer_no_float_holds_is_no_score(content):
    """An answer ending in an integer of 309+ digits (float(int) overflowed) or 4,301+ (int() refused it) is a
    counted no_score failure, as parse_verdict rules on a number that is not finite, never an uncaught error in
    judge-serve's score reading, a GRPO reward or judge-eval's parsing."""
    verdict = parse_integer_verdict(content, "рассуждение", SCALE)
    assert (verdict.ok, verdict.score, verdict.error, verdict.feedback) == (False, None, VerdictError.NO_SCORE,
                                                                            "рассуждение")
    assert "not a finite number" in verdict.reason


def test_a_long_integer_a_float_holds_reads_as_int_read_it():
    """Below the overflow the value is the one float(int(text)) gave (both round correctly), and "-0" is 0."""
    for written in ("1" + "0" * 300, "123456789012345678901234567890", "-7", "+2"):
        assert parse_integer_verdict(f"Оценка: {written}").score == float(int(written))
    zero = parse_integer_verdict("-0", None, SCALE)
    assert (zero.score, str(zero.score), zero.in_scale) == (0.0, "0.0", True)


def _old_think_blocks(text):
    """The block reading before it was made linear: every match of the pattern over the whole text, each replaced by
    a space (``_think_blocks``)."""
    from judge.verdicts import _THINK_BLOCK

    blocks = list(_THINK_BLOCK.finditer(text))
    return (blocks[0].group(1), _THINK_BLOCK.sub(" ", text)) if blocks else (None, text)


def test_think_blocks_are_read_in_linear_time(monkeypatch):
    """16,000 unclosed "<think>" tags read as the unclosed_think failure they are; one close after them, or before
    them, changes the reading as the whole-text pattern does. What makes the reading linear is which text the block pattern sees: only the text up to the last close
    (where every open tag has a close after it, so each attempt matches and no two overlap), never the unclosed
    tags past it, and nothing at all without a close. The pattern is wrapped to record the text each call is given."""
    from judge import verdicts

    seen = []

    class RecordingPattern:
        def search(self, text, pos=0, endpos=None):
            endpos = len(text) if endpos is None else endpos
            seen.append(("search", text[pos:endpos]))
            return real.search(text, pos, endpos)

        def sub(self, repl, text):
            seen.append(("sub", text))
            return real.sub(repl, text)

    real = verdicts._THINK_BLOCK
    monkeypatch.setattr(verdicts, "_THINK_BLOCK", RecordingPattern())
    closed = "<think>a</think>" * 8_000
    cases = ["<think>" * 16_000, "<think>" * 16_000 + "</think>2", "</think>" + "<think>" * 16_000,
             closed + "<think>" * 16_000, "<THINK >" * 16_000 + "x"]
    calls = []
    verdicts_read = []
    for text in cases:
        seen.clear()
        verdicts_read.append(parse_integer_verdict(text, None, SCALE))
        calls.append(list(seen))
    assert [v.error for v in verdicts_read] == [VerdictError.UNCLOSED_THINK, None, VerdictError.UNCLOSED_THINK,
                                                VerdictError.UNCLOSED_THINK, VerdictError.UNCLOSED_THINK]
    assert verdicts_read[1].score == 2.0
    assert calls == [[], [("search", cases[1][:-1]), ("sub", cases[1][:-1])], [("search", "</think>")],
                     [("search", closed), ("sub", closed)], []]
    assert verdicts._think_blocks(cases[1]) == ("<think>" * 15_999, " 2")


def test_think_blocks_read_as_the_whole_text_pattern_did():
    """The linear reading finds exactly the pattern's matches over the whole text, on a fuzz over its alphabet."""
    import random

    from judge.verdicts import _think_blocks

    rng = random.Random(0)
    pieces = ["<think>", "</think>", "<think >", "</THINK\n>", "<think", "</think", ">", " ", "x", "1", "\n"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert _think_blocks(text) == _old_think_blocks(text), text
        assert parse_integer_verdict(text, None, SCALE) == _old_parse(text), text


def _old_parse(content):
    """parse_integer_verdict as it read blocks before (the rest of it unchanged)."""
    from judge import verdicts

    real = verdicts._think_blocks
    verdicts._think_blocks = _old_think_blocks
    try:
        return parse_integer_verdict(content, None, SCALE)
    finally:
        verdicts._think_blocks = real


def test_the_last_close_is_looked_for_once(monkeypatch):
    """``_think_blocks`` finds the last ``</think>`` once and hands it to ``blocks_replaced``, whose own search of the
    whole text for it would repeat the scan; the cut it is given is the one it uses."""
    from judge import verdicts

    scans = []

    class CountingClose:
        def finditer(self, text):
            scans.append(text)
            return real.finditer(text)

    real = verdicts._THINK_CLOSE
    monkeypatch.setattr(verdicts, "_THINK_CLOSE", CountingClose())
    text = "<think>a</think>1<think>b</think>2"
    assert verdicts._think_blocks(text) == ("a", " 1 2")
    assert scans == [text]
    # the last close's end given is used, not searched for again; an earlier one leaves the blocks past it as they are
    cut = text.rindex("</think>") + len("</think>")
    assert verdicts.blocks_replaced(text, verdicts._THINK_BLOCK, real, " ", cut=cut) == " 1 2"
    assert verdicts.blocks_replaced(text, verdicts._THINK_BLOCK, real, " ", cut=text.index("1") + 1) == \
        " 1<think>b</think>2"
    assert verdicts.blocks_replaced(text, verdicts._THINK_BLOCK, real, " ", cut=0) == text
