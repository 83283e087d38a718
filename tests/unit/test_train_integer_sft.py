"""Supervised fine-tuning in the integer format (Pollux-4B-Judge's): the target, the rows built from reasoning traces,
what trl's SFTTrainer tokenizes and labels, and the export's manifest that tells judge-serve and judge-eval the format.

Run: .venv/bin/python -m pytest tests/unit/test_train_integer_sft.py -q
The tests that train or serve are in tests/integration/training/test_train_integer_sft.py.
"""

from __future__ import annotations

import json
import re

import pytest

import judge
from train.seq2seq import holds_traces, integer_rows, integer_target, sft_dataset
from tests.support.train_integer_sft import COMPLETION_TEXT, PROMPT, PROMPT_FIELDS, REASONING, TRAINING_TEXT, trace_record


@pytest.fixture(scope="module")
def trl_example(qwen3_tokenizer, tmp_path_factory):
    """The first training example exactly as trl's SFTTrainer prepares it (input_ids, labels) from the recipe's
    dataset of one integer-format row; a real trainer on a tiny Qwen3 that is built, never trained."""
    from transformers import Qwen3ForCausalLM
    from trl import SFTConfig, SFTTrainer

    from train.tiny_models import tiny_qwen3_config

    rows, _ = integer_rows([trace_record()])
    args = SFTConfig(output_dir=str(tmp_path_factory.mktemp("integer-sft")), use_cpu=True, completion_only_loss=True,
                     report_to="none", max_length=512, disable_tqdm=True)  # fmt: skip
    trainer = SFTTrainer(model=Qwen3ForCausalLM(tiny_qwen3_config()), args=args,
                         train_dataset=sft_dataset(rows, qwen3_tokenizer, thinking=True),
                         processing_class=qwen3_tokenizer)  # fmt: skip
    return trainer.train_dataset[0]


def test_integer_target_is_qwen3s_assistant_rendering_and_parses_back():
    """The target is '<think>\\n' + reasoning + '\\n</think>\\n\\n' + the bare integer (whitespace around the reasoning
    stripped, 2.0 written 2), and the serving parser reads it back as (reasoning, score)."""
    target = integer_target("\n  " + REASONING + "\n\n", 2.0)
    assert target == "<think>\nИщу ошибки.\nОшибок нет.\n</think>\n\n2"
    verdict = judge.parse_integer_verdict(target, scale=judge.Scale((0, 1, 2)))
    assert (verdict.ok, verdict.score, verdict.feedback, verdict.in_scale) == (True, 2.0, REASONING, True)
    assert integer_target("Грубо.", -1) == "<think>\nГрубо.\n</think>\n\n-1"


def test_integer_rows_are_rendered_with_thinking_on(qwen3_tokenizer):
    """The integer format's training ids are the chat template's rendering with thinking left on (as
    apply_chat(thinking=True), judge-serve's integer-format prompt): the unlabelled prompt stops at the bare
    assistant header, without the empty <think> block of the thinking-off switch the tagged format keeps."""
    rows, report = integer_rows([trace_record()])
    assert report.n_rows == 1 and rows[0]["record_id"] == "item-1" and rows[0]["prompt"] == PROMPT
    example = sft_dataset(rows, qwen3_tokenizer, thinking=True)[0]
    assert set(example) == {"input_ids", "completion_mask"}
    n = len(example["completion_mask"]) - sum(example["completion_mask"])
    assert example["completion_mask"] == [0] * n + [1] * (len(example["input_ids"]) - n)
    assert qwen3_tokenizer.decode(example["input_ids"]) == TRAINING_TEXT
    assert qwen3_tokenizer.decode(example["input_ids"][:n]) == judge.apply_chat(qwen3_tokenizer, PROMPT, thinking=True)
    assert judge.apply_chat(qwen3_tokenizer, PROMPT).endswith("<think>\n\n</think>\n\n")  # thinking off


def test_trl_trains_on_the_integer_target_byte_for_byte(trl_example, qwen3_tokenizer):
    """What SFTTrainer tokenizes is TRAINING_TEXT token for token; the labels are -100 over the prompt (through
    '<|im_start|>assistant\\n') and the ids themselves over '<think>' ... '2<|im_end|>\\n': the reasoning, the integer
    and the end-of-turn token carry the loss."""
    ids, labels = trl_example["input_ids"], trl_example["labels"]
    assert qwen3_tokenizer.decode(ids) == TRAINING_TEXT
    assert ids == qwen3_tokenizer(TRAINING_TEXT, add_special_tokens=False)["input_ids"]
    prompt_ids = qwen3_tokenizer("<|im_start|>user\n" + PROMPT + "<|im_end|>\n<|im_start|>assistant\n",
                                 add_special_tokens=False)["input_ids"]  # fmt: skip
    n = len(prompt_ids)
    assert ids[:n] == prompt_ids
    assert labels[:n] == [-100] * n
    assert labels[n:] == ids[n:]
    assert qwen3_tokenizer.decode(ids[n:]) == COMPLETION_TEXT
    # <think> (151667) opens the labelled part; </think> (151668) is learnt; <|im_end|> (151645) then "\n" end it.
    assert labels[n] == 151_667 and 151_668 in labels[n:] and labels[-2:] == [151_645, qwen3_tokenizer.encode("\n")[0]]


def test_trained_prompt_is_the_prompt_judge_serve_sends(trl_example, qwen3_tokenizer):
    """The unlabelled prompt trl trained on is, token for token, what judge-serve sends an integer-format judge for
    the same item and criterion (serve.jobs.build_jobs with thinking on), and not the thinking-off prompt."""
    from judge.wire import JudgeRequest
    from serve.jobs import build_jobs

    item = {key: PROMPT_FIELDS[key] for key in ("instruction", "answer", "reference_answer")}
    request = JudgeRequest.model_validate(
        {"items": [{**item, "criteria": [{"name": PROMPT_FIELDS["criteria_name"], "rubrics": PROMPT_FIELDS["rubrics"]}]}]})
    (job,) = build_jobs(request, qwen3_tokenizer, max_model_len=4096, max_tokens=512, thinking=True)
    n = len(job.prompt_ids)
    assert job.prompt == PROMPT
    assert trl_example["input_ids"][:n] == job.prompt_ids and trl_example["labels"][n - 1] == -100
    assert trl_example["labels"][n] != -100
    (off,) = build_jobs(request, qwen3_tokenizer, max_model_len=4096, max_tokens=512, thinking=False)
    assert len(off.prompt_ids) == n + 4  # the thinking-off prompt adds <think> \n\n </think> \n\n


def test_chatml_base_learns_the_same_completion_bytes(qwen_tokenizer):
    """A ChatML base (Qwen2.5, T-lite) renders the integer target unchanged after the same user turn: the training text
    is the hand-derived ChatML text, the prompt rendered with thinking on an exact prefix of it."""
    (row,), _ = integer_rows([trace_record()])
    text = judge.apply_chat(qwen_tokenizer, row["prompt"], row["completion"], thinking=True)
    assert text == TRAINING_TEXT
    assert text.startswith(judge.apply_chat(qwen_tokenizer, row["prompt"], thinking=True))


def test_rows_without_reasoning_are_refused_naming_the_row():
    """missing_reasoning: refuse (default) stops at the first row without a reasoning text or a reasoning_score, naming
    the source, the row and the record; drop counts them instead."""
    good = trace_record()
    no_text = judge.records_from_rows([{**good.to_dict(), "id": "item-2#0", "reasoning": "  "}], source="traces.jsonl")
    no_score = judge.records_from_rows([{**good.to_dict(), "id": "item-3#0", "reasoning_score": None}],
                                       source="traces.jsonl")  # fmt: skip
    with pytest.raises(judge.RecordError) as caught:
        integer_rows([good, *no_text])
    assert (caught.value.source, caught.value.row, caught.value.field) == ("traces.jsonl", 0, "reasoning")
    assert "'item-2#0'" in str(caught.value) and "missing_reasoning: drop" in str(caught.value)
    with pytest.raises(judge.RecordError, match="item-3#0.*reasoning_score"):
        integer_rows([good, *no_score])
    rows, report = integer_rows([good, *no_text, *no_score], missing_reasoning="drop")
    assert [row["id"] for row in rows] == ["item-1#0"]
    assert dict(report.dropped) == {"no_reasoning": 1, "no_reasoning_score": 1}


def test_a_reasoning_of_only_characters_that_show_nothing_is_no_reasoning():
    """A reasoning of a zero-width space and a BOM is blank by the records' rule (judge.plumbing.invisible_text's
    is_blank): trained, it would teach an empty <think>; refused as missing, and not taken for a traces file."""
    good = trace_record()
    unseen = judge.records_from_rows([{**good.to_dict(), "id": "item-2#0", "reasoning": "\u200b\ufeff "}],
                                     source="traces.jsonl")  # fmt: skip
    with pytest.raises(judge.RecordError) as caught:
        integer_rows([good, *unseen])
    assert (caught.value.row, caught.value.field) == (0, "reasoning")
    assert not holds_traces(unseen) and holds_traces([good])


def test_unusable_traces_are_dropped_by_reason():
    """A score that is not an integer, one outside the rubric, and a reasoning holding a think tag are each dropped
    and counted under their reason; never trained on."""
    rows, report = integer_rows([
        trace_record(id="a#0", reasoning_score=1.5),
        trace_record(id="b#0", reasoning_score=3),
        trace_record(id="c#0", reasoning="Думаю </think> 1"),
        # A score of 0 trains (the bottom of the rubric is a verdict like any other) when its experts say 0: this
        # trace once stood against trace_record's experts 2, 2, 1, a verdict that disagrees with its label, which
        # rejection sampling never trains on (test_traces_that_disagree_with_the_label_are_dropped_as_disagrees).
        trace_record(id="d#0", reasoning_score=0, expert_scores=[0, 0, 1]),
    ])
    assert [(row["id"], row["completion"][-1]) for row in rows] == [("d#0", "0")]
    assert dict(report.dropped) == {"score_not_integer": 1, "score_out_of_scale": 1, "think_tags_in_reasoning": 1}
    assert (report.n_records, report.n_rows) == (4, 1)
    # which row to look at, not a count alone: run.json's data report names the first of each reason
    assert report.to_dict()["first_dropped"] == {"score_not_integer": "a#0", "score_out_of_scale": "b#0",
                                                  "think_tags_in_reasoning": "c#0"}


def test_the_same_trace_under_another_id_is_trained_once():
    """The traces stage drops a copy of a kept trace (duplicate_trace), and so does integer SFT: files joined (a
    traces.jsonl beside a dropped.jsonl with its drop_reason stripped) would train one trace twice. The same reasoning
    and score for the same prompt is kept once, whatever its id or item (two items rendering one prompt are one
    example to the judge, as GRPO pools them); another reasoning, or another prompt, is not a copy."""
    rows, report = integer_rows([
        trace_record(id="a#0"),
        trace_record(id="a#3"),  # the stage's duplicate of a#0, its drop_reason stripped
        trace_record(id="a#1", reasoning=REASONING + " Проверено."),
        trace_record(id="b#0", item_id="b"),  # another item of the same prompt
        trace_record(id="c#0", item_id="c", instruction="Третье задание."),
        trace_record(id="mine-1", item_id=None),  # a record of your own, of the same prompt
        trace_record(id="mine-3", item_id=None, instruction="Другое задание."),
    ])
    assert [row["id"] for row in rows] == ["a#0", "a#1", "c#0", "mine-3"]
    assert dict(report.dropped) == {"duplicate_trace": 3}


def test_a_recorded_answer_that_is_more_than_the_integer_is_not_trained_on():
    """SFT trains <think>reasoning</think> then reasoning_score; a row the traces stage kept before it required a bare
    answer holds the score the serving parser read from its answer ("Оценка 1 из 2": 2, the reasoning's 1). A row
    whose recorded answer (teacher_content) is more than the integer is dropped as answer_not_bare, the stage's rule;
    a bare one, inline after its </think> too, trains, and a record with no recorded answer is judged as before."""
    rows, report = integer_rows([
        trace_record(id="a#0", item_id="a", answer="Ответ a.", teacher_content="Оценка 1 из 2"),
        trace_record(id="b#0", item_id="b", answer="Ответ b.", teacher_content=" 2\n"),
        trace_record(id="c#0", item_id="c", answer="Ответ c.",
                     teacher_content=f"<think>\n{REASONING}\n</think>\n\n2"),
        trace_record(id="d#0", item_id="d", answer="Ответ d.",
                     teacher_content=f"<think>\n{REASONING}\n</think>\n\nИтог: 2"),
        trace_record(id="e#0", item_id="e", answer="Ответ e."),
    ])
    assert [(row["id"], row["completion"][-1]) for row in rows] == [("b#0", "2"), ("c#0", "2"), ("e#0", "2")]
    assert dict(report.dropped) == {"answer_not_bare": 2} and (report.n_records, report.n_rows) == (5, 3)


def test_a_score_between_the_rubric_s_levels_is_not_trained_on():
    """On levels 0, 1 and 3 a reasoning_score of 2 is within the rubric's range, but no level: with experts 3, 3 and
    tolerance 1 it agreed and trained a judge to answer between the rubric's points. Dropped as score_not_a_level,
    the score checked before its label (a record with no experts too), as a score out of the rubric's range is."""
    rubric = "0: плохо\n\n1: средне\n\n3: отлично"
    rows, report = integer_rows([
        trace_record(id="a#0", rubrics=rubric, expert_scores=[3, 3], reasoning_score=2, tolerance=1.0),
        trace_record(id="b#0", rubrics=rubric, expert_scores=[3, 3], reasoning_score=3, tolerance=1.0),
        trace_record(id="c#0", rubrics=rubric, expert_scores=[], criteria_score=None, reasoning_score=2),
    ])
    assert [row["id"] for row in rows] == ["b#0"] and dict(report.dropped) == {"score_not_a_level": 2}


def test_a_recorded_reference_that_is_not_the_rows_expert_scores_is_dropped():
    """A row relabelled after the stage kept it (expert_scores now 0, 0, 0; experts_reference still [2.0]) trained its
    trace for 2 against the old label. The reference is recomputed from the row's expert_scores under its own
    agreement; one that differs from the recorded one is dropped as reference_mismatch, whatever the trace's score.
    A matching one trains (the mode 2 of 2, 2, 1; the median 2 of 1, 2, 2)."""
    rows, report = integer_rows([
        trace_record(id="a#0", expert_scores=[0, 0, 0], experts_reference=[2.0]),
        trace_record(id="b#0", expert_scores=[0, 0, 0], experts_reference=[2.0], reasoning_score=0),
        trace_record(id="c#0", item_id="c", experts_reference=[2.0], agreement="mode", tolerance=0.0),
        trace_record(id="d#0", item_id="d", answer="Другой ответ.", expert_scores=[1, 2, 2], experts_reference=[2.0],
                     agreement="median", tolerance=0.0),
        trace_record(id="e#0", expert_scores=[1, 2, 2], experts_reference=[5 / 3], agreement="median", tolerance=1.0),
    ])
    assert [row["id"] for row in rows] == ["c#0", "d#0"]
    assert dict(report.dropped) == {"reference_mismatch": 3} and (report.n_records, report.n_rows) == (5, 2)


def test_a_score_past_a_floats_range_is_dropped_not_raised():
    """A reasoning_score of 401 digits made float() raise OverflowError out of judge-train; it is counted as
    score_not_integer, as an unreadable score ("1e400", a list) is."""
    rows, report = integer_rows([trace_record(id="a#0", reasoning_score=10**400),
                                 trace_record(id="b#0", reasoning_score="1e400"),
                                 trace_record(id="c#0", reasoning_score=[2]), trace_record(id="d#0")])  # fmt: skip
    assert [row["id"] for row in rows] == ["d#0"] and dict(report.dropped) == {"score_not_integer": 3}


def test_a_reasoning_of_one_word_gives_no_reasons():
    """The rule of the traces stage and the GRPO format reward (judge.verdicts.gives_reasons): a trace of one word
    ("Хорошо.", or a lone ".") teaches a judge to stop thinking; dropped as too_few_words, as build-data drops a
    one-word rationale. Two words are reasons."""
    rows, report = integer_rows([trace_record(id="a#0", reasoning="Хорошо."), trace_record(id="b#0", reasoning="."),
                                 trace_record(id="c#0", reasoning="Ошибок нет.")])  # fmt: skip
    assert [row["id"] for row in rows] == ["c#0"] and dict(report.dropped) == {"too_few_words": 2}


def test_trained_lengths_of_an_integer_run_are_its_context_and_longest_completion(qwen3_tokenizer):
    """An integer-format run's export records max_length and the longest trained completion in tokens as the judge
    generates it (COMPLETION_TEXT, through <|im_end|> and its newline, is the longer of the two rows here), so
    judge-serve serves it with that room; a tagged run records none."""
    from judge.checkpoints import TrainedLengths
    from train.config import load_config
    from train.seq2seq import trained_lengths

    rows, _ = integer_rows([trace_record(id="short#0", reasoning="Ошибки есть.", reasoning_score=1, expert_scores=[1, 1, 2]),
                            trace_record()])  # fmt: skip
    integer = load_config("configs/train/tiny/seq2seq.yaml", {"verdict_format": "integer", "max_length": 512})
    longest = len(qwen3_tokenizer(COMPLETION_TEXT, add_special_tokens=False)["input_ids"])
    assert longest > len(qwen3_tokenizer(rows[0]["completion"], add_special_tokens=False)["input_ids"])
    assert trained_lengths(integer, rows, qwen3_tokenizer) == TrainedLengths(512, longest)
    tagged = load_config("configs/train/tiny/seq2seq.yaml", {"max_length": 512})
    assert trained_lengths(tagged, rows, qwen3_tokenizer) is None


def test_rows_the_traces_stage_did_not_keep_are_never_trained_on():
    """dropped.jsonl's and failed.jsonl's rows carry a reasoning and a score as traces.jsonl's do, but their score
    disagrees with the label (or the output was cut): dropped and counted, whatever file they come in."""
    rows, report = integer_rows([trace_record(id="a#0"), trace_record(id="b#0", reasoning_score=0, drop_reason="disagrees"),
                                 trace_record(id="c#0", fail_reason="no_result")])
    assert [row["id"] for row in rows] == ["a#0"] and dict(report.dropped) == {"trace_not_kept": 2}


def test_traces_that_disagree_with_the_label_are_dropped_as_disagrees():
    """Any POLLUX-format records with a reasoning and a reasoning_score train only where the score agrees with the
    label by the traces stage's own rule (train.synthetic.traces.trace_outcome): by default the experts' mode exactly.
    Experts 2, 2, 1 have mode 2: a 2 trains; a 1 and a 0 are dropped as disagrees. Experts 0 and 2 (no unique mode)
    are left out as the stage leaves them out, and a record with no experts has no label to agree with."""
    rows, report = integer_rows([
        trace_record(id="a#0"),
        trace_record(id="b#0", reasoning_score=1),
        trace_record(id="c#0", reasoning_score=0),
        trace_record(id="d#0", reasoning_score=0, expert_scores=[0, 2]),
        trace_record(id="e#0", expert_scores=[], criteria_score=None),
        # experts off the 0..2 rubric, as the traces stage and GRPO skip them
        trace_record(id="f#0", reasoning_score=2, expert_scores=[3, 3, 2]),
        trace_record(id="g#0", reasoning_score=2, expert_scores=[2, 2, 1.5]),
    ])
    assert [row["id"] for row in rows] == ["a#0"]
    assert dict(report.dropped) == {"disagrees": 2, "no_unique_mode": 1, "no_expert_scores": 1,
                                    "score_out_of_scale": 1, "score_not_a_level": 1}
    assert (report.n_records, report.n_rows) == (7, 1)


def test_rows_whose_rule_admits_every_level_are_left_out_by_the_stages_reasons_and_said_once(caplog):
    """A row whose recorded tolerance admits every level of its rubric (tolerance 1 around a mode of 1 on 0..2), or
    whose tied modes are every level (experts 0 and 1 on a 0/1 rubric, kept under no_unique_mode: any), kept every
    trace: no agreement with the label was checked. The traces stage skips such items before asking; rows it wrote
    before it did trained all the same. They are left out under the stage's reasons, and one warning gives their
    number. A tolerance of 1 around a mode of 2 leaves 0 outside it: that row is checked, and trains."""
    import logging

    stage_row = {"agreement": "mode", "tolerance": 1.0}
    records = [trace_record(id="a#0", reasoning_score=0, expert_scores=[1, 1, 2], experts_reference=[1.0], **stage_row),
               trace_record(id="b#0", reasoning_score=0, expert_scores=[0, 1], experts_reference=[0.0, 1.0],
                            rubrics="0: есть ошибки\n\n1: ошибок нет", agreement="mode", tolerance=0.0),
               trace_record(id="c#0", reasoning_score=1, experts_reference=[2.0], **stage_row)]
    with caplog.at_level(logging.WARNING, logger="train.seq2seq"):
        rows, report = integer_rows(records, source="traces.jsonl")
    assert [row["id"] for row in rows] == ["c#0"]
    assert dict(report.dropped) == {"tolerance_admits_every_level": 1, "references_cover_every_level": 1}
    warned = [r.getMessage() for r in caplog.records if "every level" in r.getMessage()]
    assert warned == ["traces.jsonl: 2 trace rows left out: by their agreement rule every level of the item's rubric "
                      "agrees with the experts (tolerance_admits_every_level: 1, references_cover_every_level: 1), so "
                      "no trace of it was checked against the label; the traces stage skips such items (rows it wrote "
                      "before it did keep every trace); counted in run.json's data report"]


def test_agreement_follows_the_traces_stage_settings_it_was_run_with(tmp_path):
    """traces.jsonl trains by the settings its stage recorded: the tolerance and agreement in the summary.json beside
    it, and the references each row was judged against (experts_reference). With tolerance 1 a 1 against experts
    2, 2, 1 agrees and a 0 does not (|0 - 2| = 2); a row the stage judged against the tied modes 0 and 2
    (no_unique_mode: any) trains at 0 by the mode exactly, and under tolerance 1 (every level of 0..2 within 1 of a
    mode: nothing checked) is left out as the stage skips such an item."""
    import json

    from train.seq2seq import traces_agreement

    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"stage": "traces", "agreement": "mode", "tolerance": 1.0,
                                                     "no_unique_mode": "any"}), encoding="utf-8")  # fmt: skip
    source = str(folder / "traces.jsonl")
    assert traces_agreement(source) == {"agreement": "mode", "tolerance": 1.0, "no_unique_mode": "any"}
    assert traces_agreement(str(tmp_path / "elsewhere.jsonl")) == {"agreement": "mode", "tolerance": 0.0,
                                                                   "no_unique_mode": "skip"}  # fmt: skip
    records = [trace_record(id="a#0", reasoning_score=1), trace_record(id="b#0", reasoning_score=0),
               trace_record(id="c#0", reasoning_score=0, expert_scores=[0, 2], experts_reference=[0.0, 2.0])]
    rows, report = integer_rows(records, source=source)
    assert [row["id"] for row in rows] == ["a#0"]
    assert dict(report.dropped) == {"disagrees": 1, "tolerance_admits_every_level": 1}
    rows, report = integer_rows(records)  # the same rows with the stage's defaults: the mode exactly
    assert [row["id"] for row in rows] == ["c#0"] and dict(report.dropped) == {"disagrees": 2}


@pytest.mark.parametrize("key, value, must", [
    ("tolerance", "one", "must be a number of points, 0 or more"),  # a ValueError traceback from judge-train run
    ("tolerance", -1, "must be a number of points, 0 or more"),  # every trace dropped as disagrees
    ("tolerance", float("nan"), "must be a number of points, 0 or more"),
    ("agreement", "majority", "must be 'mode', 'median' or 'mean'"),
    ("no_unique_mode", "drop", "must be 'skip' or 'any'"),  # judged as 'any'
])  # fmt: skip
def test_a_traces_summary_setting_the_config_would_refuse_is_refused_naming_the_file(tmp_path, key, value, must):
    """The traces stage's summary.json is held to the rule the config's own agreement, tolerance and no_unique_mode
    are: a value the config refuses is a ConfigError naming the file, the key and the value, before any row is
    judged by it."""
    import json

    from train.config import ConfigError, load_config
    from train.seq2seq import traces_agreement

    folder = tmp_path / "traces"
    folder.mkdir()
    summary = {"stage": "traces", "agreement": "mode", "tolerance": 1.0, "no_unique_mode": "skip", key: value}
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    said = f"{folder / 'summary.json'}: {key} {must}"
    with pytest.raises(ConfigError) as refused:
        traces_agreement(str(folder / "traces.jsonl"))
    assert str(refused.value).startswith(said) and f"got {value!r}" in str(refused.value)
    with pytest.raises(ConfigError, match=re.escape(said)):
        integer_rows([trace_record()], source=str(folder / "traces.jsonl"))
    # the config's own field refuses the same value (its text is no number at all, its NaN no finite one)
    with pytest.raises(ConfigError, match=f"{key}:? (must|expected a number)"):
        load_config("configs/train/tiny/seq2seq.yaml", {key: value})


def test_zero_shot_traces_are_refused_as_build_data_refuses_them():
    """A trace of a Zero-Shot task type is refused by default (judge.LeakageError with build-data's hint), left out
    and counted with zero_shot: drop."""
    spec = judge.load_split_spec()
    held_out = sorted(spec.task_types)[0]
    # An instruction of its own: an instruction's rows share one split (judge.splits_of).
    leak = trace_record(id="z#0", task_type=held_out, instruction="Перепиши это письмо в деловом стиле.")
    with pytest.raises(judge.LeakageError, match="zero_shot: drop"):
        integer_rows([trace_record(), leak])
    rows, report = integer_rows([trace_record(), leak], zero_shot="drop")
    assert [row["id"] for row in rows] == ["item-1#0"] and report.dropped["zero_shot"] == 1


def test_config_takes_the_integer_format_and_refuses_unknown_values():
    """verdict_format and missing_reasoning are seq2seq config fields, checked when the config loads."""
    from train.config import ConfigError, load_config

    config = load_config("configs/train/tiny/seq2seq.yaml", {"verdict_format": "integer", "missing_reasoning": "drop"})
    assert (config.verdict_format, config.missing_reasoning) == ("integer", "drop")
    assert load_config("configs/train/tiny/seq2seq.yaml").verdict_format == "tagged"
    with pytest.raises(ConfigError, match="verdict_format must be 'tagged' or 'integer'"):
        load_config("configs/train/tiny/seq2seq.yaml", {"verdict_format": "json"})
    with pytest.raises(ConfigError, match="missing_reasoning"):
        load_config("configs/train/tiny/seq2seq.yaml", {"missing_reasoning": "guess"})


def test_the_agreement_rule_for_your_own_records_is_set_from_the_config(tmp_path, qwen3_tokenizer):
    """Records of your own carry no rule, and the recipe judged them by the traces stage's defaults whatever the
    config said. agreement, tolerance and no_unique_mode in the config now set it: experts 2, 2, 1 and a trace's 1
    agree with tolerance 1 (|1 - 2| = 1); experts 0 and 2 (two modes) train with no_unique_mode any; experts 0, 1,
    2, 2 have median 1.5, which a trace's 1 meets with agreement median and tolerance 0.5 (its mode, 2, it does
    not). A row the stage wrote keeps its own rule (tolerance 0 here). A value the rule has not is refused."""
    import dataclasses

    from train.config import ConfigError, load_config
    from train.seq2seq import integer_rows_for_config

    records = [trace_record(id="a#0", item_id="a", answer="Ответ a.", reasoning_score=1),
               trace_record(id="b#0", item_id="b", answer="Ответ b.", reasoning_score=0, expert_scores=[0, 2]),
               trace_record(id="c#0", item_id="c", answer="Ответ c.", reasoning_score=1, expert_scores=[0, 1, 2, 2]),
               trace_record(id="d#0", item_id="d", answer="Ответ d.", reasoning_score=1, tolerance=0.0,
                            agreement="mode", experts_reference=[2.0])]  # fmt: skip
    data = tmp_path / "mine.jsonl"
    judge.write_jsonl(records, data)
    base = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                               data=str(data), eval_data=None, eval_fraction=0.0, max_rows=None)

    def trained(**settings):
        train, _, report = integer_rows_for_config(dataclasses.replace(base, **settings), qwen3_tokenizer)
        return sorted(row["id"] for row in train), dict(report.dropped)

    with pytest.raises(ConfigError, match="no integer-format training rows left in .* disagrees=3, no_unique_mode=1"):
        trained()  # the stage's defaults: the mode exactly, ties left out
    assert trained(tolerance=1.0) == (["a#0", "c#0"], {"disagrees": 1, "no_unique_mode": 1})
    assert trained(no_unique_mode="any") == (["b#0"], {"disagrees": 3})
    assert trained(agreement="median", tolerance=0.5) == (["c#0"], {"disagrees": 3})
    for bad, message in (({"agreement": "majority"}, "agreement must be 'mode', 'median' or 'mean'"),
                         ({"tolerance": -1.0}, "tolerance must be a number of points, 0 or more"),
                         ({"no_unique_mode": "drop"}, "no_unique_mode must be 'skip' or 'any'")):
        with pytest.raises(ConfigError, match=message):
            load_config("configs/train/tiny/seq2seq.yaml", bad)
    assert load_config("configs/train/tiny/grpo.yaml", {"no_unique_mode": "nearest"}).no_unique_mode == "nearest"
    # judge-train's pre-flight, before the run folder is claimed, reads the rule the same way: it passes the config
    # the recipe trains, and refuses the defaults that leave no row.
    from train.cli import check_training_data

    check_training_data(dataclasses.replace(base, tolerance=1.0))
    with pytest.raises(ConfigError, match="no training rows left in .*disagrees=3, no_unique_mode=1"):
        check_training_data(base)


def test_rows_whose_own_tolerance_is_looser_than_the_configs_are_counted_and_said_once(tmp_path, qwen3_tokenizer,
                                                                                       caplog):
    """A row the traces stage wrote keeps the tolerance it records (the precedence the config's help and
    docs/reasoning-judges.md state), so a config that sets a stricter one does not apply to it. Nothing said so: two
    stage rows at tolerance 1 whose 1 is one point off experts 2, 2, 1 train under tolerance 0. Their rows are kept
    as before; one warning names the config's tolerance and the count, which run.json's data report records. A row
    recording the config's tolerance, a record of your own and a config that sets none are not counted."""
    import dataclasses
    import logging

    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    stage_row = {"agreement": "mode", "experts_reference": [2.0]}
    records = [trace_record(id="a#0", item_id="a", answer="Ответ a.", reasoning_score=1, tolerance=1.0, **stage_row),
               trace_record(id="b#0", item_id="b", answer="Ответ b.", reasoning_score=1, tolerance=1.0, **stage_row),
               trace_record(id="c#0", item_id="c", answer="Ответ c.", reasoning_score=2, tolerance=0.0, **stage_row),
               trace_record(id="d#0", item_id="d", answer="Ответ d.", reasoning_score=2)]  # fmt: skip
    data = tmp_path / "traces.jsonl"
    judge.write_jsonl(records, data)
    base = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                               data=str(data), eval_data=None, eval_fraction=0.0, max_rows=None)

    def built(tolerance):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="train.seq2seq"):
            train, _, report = integer_rows_for_config(dataclasses.replace(base, tolerance=tolerance),
                                                       qwen3_tokenizer)
        warned = [r.getMessage() for r in caplog.records if "agreement rule other" in r.getMessage()]
        return sorted(row["id"] for row in train), report.to_dict(), warned

    ids, report, warned = built(0.0)
    assert ids == ["a#0", "b#0", "c#0", "d#0"] and report["looser_row_tolerance"] == 2
    assert report["rule_differs_from_config"] == 2
    assert warned == [f"{data}: 2 trace rows with an agreement rule other than the config's (tolerance 0): "
                      "tolerance 1, each judged by the rule it records (a row's recorded agreement and tolerance win over "
                      "the config's, which apply to rows that record none: a row keeps the rule its trace was kept "
                      "by); counted as rule_differs_from_config in run.json's data report; 2 of them by a looser "
                      "tolerance, counted as looser_row_tolerance"]
    ids, report, warned = built(None)
    assert ids == ["a#0", "b#0", "c#0", "d#0"] and "looser_row_tolerance" not in report and warned == []
    assert "rule_differs_from_config" not in report
    ids, report, warned = built(1.0)  # the row recording tolerance 0 is judged by it: stricter, said all the same
    assert ids == ["a#0", "b#0", "c#0", "d#0"] and "looser_row_tolerance" not in report
    assert report["rule_differs_from_config"] == 1 and len(warned) == 1 and "(tolerance 1): tolerance 0," in warned[0]
    assert warned[0].startswith(f"{data}: 1 trace row with an agreement rule")  # the noun in its number


def test_rows_whose_own_agreement_differs_from_the_configs_are_counted_and_said_once(tmp_path, qwen3_tokenizer,
                                                                                     caplog):
    """A row the traces stage wrote under agreement median trains by it when the config says mode: nothing said so.
    One warning names the config's rule and the rows' (each value once, however many rows), and run.json's data
    report counts the rows; rows recording the config's rule and records of your own are not counted."""
    import dataclasses
    import logging

    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    records = [trace_record(id=f"{item}#0", item_id=item, answer=f"Ответ {item}.", agreement="median", tolerance=0.0,
                            experts_reference=[2.0]) for item in "abc"]
    records += [trace_record(id="d#0", item_id="d", answer="Ответ d.", agreement="mode", tolerance=0.0,
                             experts_reference=[2.0]),
                trace_record(id="e#0", item_id="e", answer="Ответ e.")]
    data = tmp_path / "traces.jsonl"
    judge.write_jsonl(records, data)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(data), eval_data=None, eval_fraction=0.0, max_rows=None,
                                 agreement="mode", tolerance=0.0)
    with caplog.at_level(logging.WARNING, logger="train.seq2seq"):
        train, _, report = integer_rows_for_config(config, qwen3_tokenizer)
    warned = [r.getMessage() for r in caplog.records if "agreement rule other" in r.getMessage()]
    assert len(train) == 5 and report.to_dict()["rule_differs_from_config"] == 3
    assert "looser_row_tolerance" not in report.to_dict()
    assert warned == [f"{data}: 3 trace rows with an agreement rule other than the config's (agreement mode, "
                      "tolerance 0): agreement median, each judged by the rule it records (a row's recorded agreement and "
                      "tolerance win over the config's, which apply to rows that record none: a row keeps the rule "
                      "its trace was kept by); counted as rule_differs_from_config in run.json's data report"]


def test_eval_traces_whose_own_tolerance_is_looser_are_counted_in_the_eval_report(tmp_path, qwen3_tokenizer):
    """The held-out traces of ``eval_data`` are built by the same rule and warned of for their source: run.json's
    ``eval`` counts them as its ``data`` does, where the training traces have none."""
    import dataclasses

    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    stage_row = {"agreement": "mode", "experts_reference": [2.0]}
    data, eval_data = tmp_path / "traces.jsonl", tmp_path / "eval_traces.jsonl"
    judge.write_jsonl([trace_record(id=f"{item}#0", item_id=item, reasoning_score=2) for item in "abc"], data)
    judge.write_jsonl([trace_record(id="e#0", item_id="e", reasoning_score=1, tolerance=1.0, **stage_row),
                       trace_record(id="f#0", item_id="f", reasoning_score=2)], eval_data)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(data), eval_data=str(eval_data), max_rows=None, tolerance=0.0)
    _, held_out, report = integer_rows_for_config(config, qwen3_tokenizer)
    counts = report.to_dict()
    assert len(held_out) == 2 and "looser_row_tolerance" not in counts
    assert counts["eval"]["looser_row_tolerance"] == 1


def test_export_manifest_records_the_format_and_serve_and_eval_read_it(tmp_path, qwen3_tokenizer):
    """export_seq2seq writes verdict_format into pollux_judge.json; judge.checkpoints (what judge-serve's auto format
    and judge-eval ask) reads integer back with no flag, and a tagged export stays tagged."""
    from transformers import Qwen3ForCausalLM

    from judge.checkpoints import EXPORT_MANIFEST, checkpoint_verdict_format
    from train.export import export_seq2seq
    from train.tiny_models import tiny_qwen3_config

    model = Qwen3ForCausalLM(tiny_qwen3_config())
    integer_dir = export_seq2seq(model, qwen3_tokenizer, tmp_path / "integer", verdict_format="integer")
    manifest = json.loads((integer_dir / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    assert manifest == {"mode": "seq2seq", "prompt_version": judge.PROMPT_VERSION, "generator": ".", "score_head": None,
                        "verdict_format": "integer"}  # fmt: skip
    assert checkpoint_verdict_format(integer_dir) == "integer"
    tagged_dir = export_seq2seq(model, qwen3_tokenizer, tmp_path / "tagged")
    assert checkpoint_verdict_format(tagged_dir) == "tagged"

    from eval.judging.run import resolve_verdict_format

    assert resolve_verdict_format("auto", str(integer_dir), "any-name") == "integer"


def test_judge_train_refuses_rows_without_reasoning_before_writing_anything(tmp_path, capsys):
    """`judge-train run --verdict-format integer` on data with no reasoning traces (the bundled sample) exits 2 with
    the error naming the file, the row and the field, before the run folder exists; no traceback."""
    from train.cli import main

    out = tmp_path / "run"
    assert main(["run", "--config", "configs/train/tiny/seq2seq.yaml", "--verdict-format", "integer",
                 "--output-dir", str(out)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "field 'reasoning'" in err and "judge-train data traces" in err
    # the line named is the one that holds the record named (from 1, as an editor numbers it)
    named = re.search(rf"{re.escape(str(judge.sample_data_path()))}: line (\d+): field 'reasoning': record '([^']+)'", err)
    lines = judge.sample_data_path().read_text(encoding="utf-8").splitlines()
    assert named and json.loads(lines[int(named[1]) - 1])["id"] == named[2], err
    assert not out.exists()


def test_an_eval_data_of_records_without_traces_gives_way_to_a_split_of_the_traces(tmp_path, qwen3_tokenizer, caplog):
    """The configs name the split stage's validation.jsonl as eval_data (records, no reasoning), and the documented
    integer run passes only --data traces.jsonl: the pre-flight check and the recipe set it aside, with a warning,
    and hold out the traces' own split by instruction instead (it once refused the run: no 'reasoning' in validation.jsonl).
    An eval_data that holds traces is still used as given."""
    import dataclasses
    import logging

    from train.cli import check_training_data
    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    traces = tmp_path / "traces.jsonl"
    judge.write_jsonl([trace_record(id=f"item-{k}#0", item_id=f"item-{k}", instruction=f"Исправь ошибки в тексте {k}.")
                       for k in range(60)], traces)
    records = tmp_path / "validation.jsonl"
    judge.write_jsonl(judge.load_records(judge.sample_data_path())[:5], records)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(traces), eval_data=str(records), eval_fraction=0.25, max_rows=None)
    check_training_data(config)  # no refusal
    with caplog.at_level(logging.WARNING, logger="train"):
        train, held_out, _ = integer_rows_for_config(config, qwen3_tokenizer)
    assert "holds no reasoning traces" in caplog.text
    assert len(train) + len(held_out) == 60 and 0 < len(held_out) < 30
    assert not {r["record_id"] for r in train} & {r["record_id"] for r in held_out}
    as_given = dataclasses.replace(config, eval_data=str(traces))
    assert len(integer_rows_for_config(as_given, qwen3_tokenizer)[1]) == 60


def test_an_eval_data_of_traces_is_read_once(tmp_path, qwen3_tokenizer, caplog):
    """The integer recipe asks whether eval_data holds traces and then builds its rows from the same records: one
    read, so its load summary is logged once (the file was read, and said, twice)."""
    import dataclasses
    import logging

    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    traces, eval_traces = tmp_path / "traces.jsonl", tmp_path / "eval-traces.jsonl"
    for path, first in ((traces, 0), (eval_traces, 100)):
        judge.write_jsonl([trace_record(id=f"item-{k}#0", item_id=f"item-{k}",
                                        instruction=f"Исправь ошибки в тексте {k}.")
                           for k in range(first, first + 8)], path)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(traces), eval_data=str(eval_traces), eval_fraction=0.0, max_rows=None)
    with caplog.at_level(logging.INFO, logger="train"):
        train, held_out, _ = integer_rows_for_config(config, qwen3_tokenizer)
    assert len(train) == len(held_out) == 8
    messages = [record.getMessage() for record in caplog.records]
    assert sum(message.startswith(f"{eval_traces}: 8 rows -> ") for message in messages) == 1, messages
    assert sum(message.startswith(f"{traces}: 8 rows -> ") for message in messages) == 1, messages


def test_eval_traces_sharing_instructions_with_the_training_traces_are_warned_and_counted(tmp_path, qwen3_tokenizer,
                                                                                           caplog):
    """The integer format's eval_data of traces is counted as the tagged format's eval_data is: how many of its rows
    share an instruction with training rows (eval.n_rows_sharing_instructions in run.json's data report), warned."""
    import dataclasses
    import logging

    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    traces, eval_traces = tmp_path / "traces.jsonl", tmp_path / "eval-traces.jsonl"
    judge.write_jsonl([trace_record(id=f"item-{k}#0", item_id=f"item-{k}", instruction=f"Исправь ошибки в тексте {k}.")
                       for k in range(8)], traces)
    # items of their own, three of them under instructions the training traces have
    judge.write_jsonl([trace_record(id=f"item-{k}#0", item_id=f"item-{k}",
                                    instruction=f"Исправь ошибки в тексте {k % 100 if k < 103 else k}.")
                       for k in range(100, 106)], eval_traces)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(traces), eval_data=str(eval_traces), eval_fraction=0.0, max_rows=None)
    with caplog.at_level(logging.WARNING, logger="train"):
        train, held_out, report = integer_rows_for_config(config, qwen3_tokenizer)
    assert (len(train), len(held_out)) == (8, 6)
    assert report.to_dict()["eval"]["n_rows_sharing_instructions"] == 3
    assert f"eval_data {eval_traces}: 3 of its 6 rows share their instruction with training rows" in caplog.text


def test_a_reasoning_not_in_russian_is_dropped_as_build_data_drops_a_rationale(qwen3_tokenizer, tmp_path):
    """build-data drops a tagged rationale with fewer than min_russian_share of its letters Cyrillic (not_russian);
    the same text as a trace's reasoning trained an English-reasoning judge. It is dropped the same way (build-data's
    own russian_share), kept with min_russian_share 0, and the recipe's data step passes the config's setting."""
    import dataclasses

    from train.build_data import build_rows
    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    english = "The answer fixes the spelling error; no other mistakes remain."
    tagged = judge.records_from_rows([{**PROMPT_FIELDS, "id": "b", "task_type": "Editing", "expert_scores": [2],
                                       "expert_feedback": [english]}], source="records.jsonl")  # fmt: skip
    assert dict(build_rows(tagged, recipe="seq2seq")[1].dropped) == {"not_russian": 1}
    records = [trace_record(id="en#0", reasoning=english), trace_record()]
    rows, report = integer_rows(records)
    assert [row["id"] for row in rows] == ["item-1#0"] and dict(report.dropped) == {"not_russian": 1}
    rows, report = integer_rows(records, min_russian_share=0.0)
    assert [row["id"] for row in rows] == ["en#0", "item-1#0"] and not report.dropped

    data = tmp_path / "traces.jsonl"
    judge.write_jsonl(records, data)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(data), eval_data=None, eval_fraction=0.0, max_rows=None)
    assert dict(integer_rows_for_config(config, qwen3_tokenizer)[2].dropped) == {"not_russian": 1}
    kept = integer_rows_for_config(dataclasses.replace(config, min_russian_share=0.0), qwen3_tokenizer)[0]
    assert sorted(row["id"] for row in kept) == ["en#0", "item-1#0"]


def test_dataset_folder_rows_from_before_rows_carried_their_rule_go_by_the_summary_above_it(tmp_path):
    """The traces stage's dataset/ folder lies inside its output folder, beside summary.json, not holding it: rows
    written before rows recorded their tolerance train there by that summary (tolerance 1: experts 2, 2, 1 and a
    trace's 1 agree), as traces.jsonl's do, not by the default tolerance 0. A row's own tolerance wins over it."""
    from datasets import Dataset

    from train.build_data import load_training_records
    from train.seq2seq import traces_agreement

    out = tmp_path / "traces"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"stage": "traces", "agreement": "mode", "tolerance": 1.0,
                                                  "no_unique_mode": "skip"}), encoding="utf-8")  # fmt: skip
    rows = [trace_record(id="a#0").to_dict(), trace_record(id="b#0", reasoning_score=1).to_dict()]
    Dataset.from_list(rows).save_to_disk(str(out / "dataset"))
    assert traces_agreement(str(out / "dataset"))["tolerance"] == 1.0
    trained, report = integer_rows(load_training_records(str(out / "dataset")), source=str(out / "dataset"))
    assert [row["id"] for row in trained] == ["a#0", "b#0"] and not report.dropped
    strict = [trace_record(id="a#0", tolerance=0.0), trace_record(id="b#0", reasoning_score=1, tolerance=0.0)]
    trained, report = integer_rows(strict, source=str(out / "traces.jsonl"))
    assert [row["id"] for row in trained] == ["a#0"] and dict(report.dropped) == {"disagrees": 1}


def test_the_pre_flight_check_applies_the_configs_min_russian_share(tmp_path):
    """judge-train's check before the run builds the rows with the config's min_russian_share too: English traces
    with min_russian_share 0 are trained, not refused as "no training rows left" by the default's 0.5."""
    import dataclasses

    from train.cli import check_training_data
    from train.config import ConfigError, load_config

    data = tmp_path / "traces.jsonl"
    judge.write_jsonl([trace_record(id="en#0", reasoning="The answer fixes the spelling error; nothing else is wrong.")],
                      data)  # fmt: skip
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(data), eval_data=None, eval_fraction=0.0, max_rows=None)
    with pytest.raises(ConfigError, match="not_russian"):
        check_training_data(config)
    check_training_data(dataclasses.replace(config, min_russian_share=0.0))  # no refusal


def test_the_console_says_how_many_traces_are_trained_on_after_the_max_rows_cut(qwen3_tokenizer, tmp_path, caplog):
    """The tiny config's max_rows: 4 kept 4 of the traces while the only line logged said every row was kept. Ten
    traces of ten instructions, none held out: the line after the cuts says 4 training rows and the 6 max_rows left
    out."""
    import dataclasses
    import logging

    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    traces = tmp_path / "traces.jsonl"
    judge.write_jsonl([trace_record(id=f"item-{k}#0", item_id=f"item-{k}", instruction=f"Исправь ошибки в тексте {k}.")
                       for k in range(10)], traces)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(traces), eval_data=None, eval_fraction=0.0, max_rows=4)
    with caplog.at_level(logging.INFO, logger="train.seq2seq"):
        train, held_out, _ = integer_rows_for_config(config, qwen3_tokenizer)
    assert (len(train), len(held_out)) == (4, 0)
    said = [r.getMessage() for r in caplog.records if r.name == "train.seq2seq"]
    assert said[-1].endswith("-> 10 rows kept; dropped 0: none; 4 training rows (6 more left out by max_rows 4), "
                             "0 validation rows"), said
