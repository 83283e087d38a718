"""The pure parts of judging: request validation, prompt jobs and their order, score distributions, rationales."""

from __future__ import annotations

import json
import math
import re

import pytest

import judge
from judge import Scale
from serve.jobs import build_jobs
from serve.judging import verdict_regex
from serve.score_reading import level_token_ids, score_distribution
from serve.schema import RequestError, parse_judge_request, resolve_criteria

GOOD_ITEM = {"instruction": "Напиши стих", "answer": "Роза красная", "criteria": ["Креативность"]}

# ------------------------------------------------------------------------------------------ request validation

BAD_REQUESTS = [
    # (body, param the 4xx must name)
    ([], "body"),
    ({}, "items"),
    ({"items": []}, "items"),
    ({"items": [{"answer": "a", "criteria": ["Креативность"]}]}, "items[0].instruction"),
    ({"items": [{**GOOD_ITEM, "answer": "   "}]}, "items[0].answer"),
    ({"items": [{**GOOD_ITEM, "answer": 5}]}, "items[0].answer"),
    ({"items": [{**GOOD_ITEM, "criteria": []}]}, "items[0].criteria"),
    # a blank task type names no task (judge.criteria.task_path): criteria required, as with none (it was a 500)
    ({"items": [{"instruction": "q", "answer": "a", "task_type": "   "}]}, "items[0].criteria"),
    ({"items": [{**GOOD_ITEM, "criteria": "Креативность"}]}, "items[0].criteria"),
    ({"items": [{**GOOD_ITEM, "criteria": [7]}]}, "items[0].criteria[0]"),
    ({"items": [{**GOOD_ITEM, "criteria": [{"name": "X"}]}]}, "items[0].criteria[0].rubrics"),
    ({"items": [{**GOOD_ITEM, "criteria": [{"name": "X", "rubrics": 3}]}]}, "items[0].criteria[0].rubrics"),
    ({"items": [{**GOOD_ITEM, "criteria": [{"name": 1, "rubrics": "0: a\n1: b"}]}]}, "items[0].criteria[0].name"),
    ({"items": [{**GOOD_ITEM, "critera": ["Креативность"]}]}, "items[0].critera"),
    ({"items": [{k: v for k, v in GOOD_ITEM.items() if k != "criteria"}]}, "items[0].criteria"),
    ({"items": [GOOD_ITEM], "max_tokens": "10"}, "max_tokens"),
    ({"items": [GOOD_ITEM], "max_tokens": 0}, "max_tokens"),
    ({"items": [GOOD_ITEM], "temperature": -1}, "temperature"),
    ({**GOOD_ITEM, "items": [GOOD_ITEM]}, "instruction"),
    # a pairwise body has no constrained (docs/serving.md): pairs follow the server's setting
    ({"pairs": [{"instruction": "q", "answer_1": "a", "answer_2": "b", "rubrics": "-1: 1\n0: =\n1: 2"}],
      "constrained": False}, "constrained"),
    ({"pairs": [{"instruction": "q", "answer_1": "a", "answer_2": "b", "rubrics": "-1: 1\n0: =\n1: 2"}],
      "oversize": "drop"}, "oversize"),
]


@pytest.mark.parametrize(("body", "param"), BAD_REQUESTS, ids=[p for _, p in BAD_REQUESTS])
def test_bad_requests_name_the_field(body, param):
    """Every malformed body is a RequestError (400) whose param is the bad field's path."""
    with pytest.raises(RequestError) as err:
        parse_judge_request(body)
    assert (err.value.status, err.value.param) == (400, param)
    assert err.value.message.startswith(param)


BAD_CRITERIA = [
    ({"criteria": ["Креативностьь"]}, "items[0].criteria[0]", "did you mean"),
    ({"criteria": ["Креативность", "no such thing"]}, "items[0].criteria[1]", "unknown criterion"),
    ({"criteria": [{"name": "X", "rubrics": "без шкалы"}]}, "items[0].criteria[0].rubrics", "no scale"),
    ({"criteria": None, "task_type": "Poetry writing"}, "items[0].task_type", "unknown task type"),
    ({"criteria": None, "task_type": "Code modification"}, "items[0].task_subtype", "name one of"),
    ({"criteria": None, "task_type": "Summarizing", "task_subtype": "Brief retelling"}, "items[0].task_subsubtype",
     "name one of"),
    ({"criteria": None, "task_type": "Code modification", "task_subtype": "Pythn"}, "items[0].task_subtype",
     "has no subtype 'Pythn'"),
    ({"criteria": None, "task_type": "Translation, English-Russian language pair", "task_subtype": "",
      "task_subsubtype": "Literary"}, "items[0].task_subsubtype", "has no sub-subtype 'Literary'"),
]


@pytest.mark.parametrize(("change", "param", "message"), BAD_CRITERIA, ids=[m for *_, m in BAD_CRITERIA])
def test_bad_criteria_name_the_field(change, param, message):
    """Unknown criteria, unreadable custom rubrics and unknown or ambiguous task types name the field."""
    item = {**GOOD_ITEM, **change}
    if item["criteria"] is None:
        del item["criteria"]
    request = parse_judge_request({"items": [item]})
    with pytest.raises(RequestError, match=message) as err:
        resolve_criteria(request.items[0], 0)
    assert err.value.param == param


def test_criteria_by_name_id_custom_and_task_type():
    """Criteria resolve by Russian or English name, by id, as custom rubrics, and from a task type's set."""
    request = parse_judge_request(
        {
            "items": [
                {**GOOD_ITEM, "criteria": ["Креативность", "Creativity", "facts__3", {"name": "Вежливость", "rubrics": {"1": "да", "0": "нет"}}]},
                {"instruction": "Исправь код", "answer": "x = 1", "task_type": "Code modification", "task_subtype": "Python"},
            ]
        }
    )
    first = resolve_criteria(request.items[0], 0)
    assert [c.id for c in first] == ["creativity", "creativity", "facts__3", None]
    assert first[3].rubrics == "0: нет\n\n1: да" and first[3].scale.levels == (0, 1)
    tax = judge.load_taxonomy()
    assert [c.id for c in resolve_criteria(request.items[1], 1)] == [c.id for c in tax.criteria_for("Code modification", "Python")]


def test_inline_item_is_one_item():
    """Item fields at the top level are one item."""
    request = parse_judge_request({**GOOD_ITEM, "id": "x1", "max_tokens": 5})
    assert len(request.items) == 1 and request.items[0].id == "x1" and request.max_tokens == 5


# ------------------------------------------------------------------------------------------ jobs and order


def test_build_jobs_groups_shared_prompts_and_matches_the_contract(qwen_tokenizer):
    """Jobs of one answer are adjacent, and each prompt is judge.render_prompt through the chat template."""
    request = parse_judge_request(
        {
            "items": [
                {"instruction": "I", "answer": "A", "criteria": ["Креативность", "facts__3"]},
                {"instruction": "I", "answer": "B", "criteria": ["Креативность"]},
                {"instruction": "I", "answer": "A", "criteria": ["Грамотность"]},
            ]
        }
    )
    jobs = build_jobs(request, qwen_tokenizer, max_model_len=2048, max_tokens=64)
    assert [(j.item, j.slot) for j in jobs] == [(0, 0), (0, 1), (2, 0), (1, 0)]
    crit = judge.load_taxonomy().criterion("facts__3")
    expected = judge.render_prompt(
        {"instruction": "I", "answer": "A", "reference_answer": "", "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru")}
    )
    assert jobs[1].prompt == expected
    text = judge.apply_chat(qwen_tokenizer, expected)
    assert text.startswith("<|im_start|>user\n### Задание для оценки:\nI\n\n### Эталонный ответ:\n\n\n### Ответ для оценки:\nA")
    assert jobs[1].prompt_ids == qwen_tokenizer(text, add_special_tokens=False)["input_ids"]


def test_prompt_longer_than_context_is_a_clear_error(qwen_tokenizer, monkeypatch):
    """A prompt that leaves no room for max_tokens is refused naming the item and criterion, with token counts; an
    item whose instruction and answer alone are over the prompt's budget is refused by its own token count, before
    any of its criteria is rendered (with 128 criteria that is 128 copies of a long answer not made)."""
    # 200 words: 432 tokens of shared part, within the 448 left of 512 - 64; with the criterion's rubric, 578.
    request = parse_judge_request({"items": [GOOD_ITEM, {**GOOD_ITEM, "answer": "слово " * 200}]})
    with pytest.raises(RequestError, match=r"items\[1\]\.criteria\[0\]: the prompt .* tokens.*context of 512") as err:
        build_jobs(request, qwen_tokenizer, max_model_len=512, max_tokens=64)
    assert err.value.param == "items[1].criteria[0]" and err.value.code == "context_length_exceeded"
    rendered = []
    render = judge.prompts.PromptTemplate.render
    monkeypatch.setattr(judge.prompts.PromptTemplate, "render",
                        lambda self, fields, clean=False: rendered.append(fields) or render(self, fields, clean))
    many = parse_judge_request({"items": [GOOD_ITEM, {**GOOD_ITEM, "answer": "слово " * 600,
                                                      "criteria": ["Креативность"] * 128}]})
    with pytest.raises(RequestError) as err:
        build_jobs(many, qwen_tokenizer, max_model_len=512, max_tokens=64)
    assert str(err.value) == ("items[1]: its instruction, reference answer and answer alone are 1235 tokens, more than "
                              "the 448 prompt tokens left of the model's context of 512 (max_tokens 64). Shorten the "
                              "answer.")
    assert (err.value.param, err.value.code, rendered) == ("items[1]", "context_length_exceeded", [])


def test_a_refusal_for_length_names_the_part_to_shorten(qwen_tokenizer):
    """A prompt too long for the context is refused naming its longest part, the one worth shortening: a long
    instruction is not told "Shorten the answer" (each of the three checks: characters, the shared part's tokens, a
    criterion's prompt)."""
    from serve.jobs import check_sizes

    def refusal(item, check=build_jobs):
        with pytest.raises(RequestError) as err:
            if check is build_jobs:
                build_jobs(parse_judge_request({"items": [item]}), qwen_tokenizer, max_model_len=512, max_tokens=64)
            else:
                check_sizes(parse_judge_request({"items": [item]}), max_model_len=512, max_tokens=64, reserve=0,
                            chars_per_token=4)
        assert err.value.code == "context_length_exceeded"
        return str(err.value)

    assert refusal({**GOOD_ITEM, "instruction": "слово " * 600}).endswith("(max_tokens 64). Shorten the instruction.")
    assert refusal({**GOOD_ITEM, "answer": "слово " * 600}).endswith("(max_tokens 64). Shorten the answer.")
    rubric = "\n\n".join(f"{level}: " + "очень подробное описание уровня " * 60 for level in (0, 1))
    assert refusal({**GOOD_ITEM, "criteria": [{"name": "Своё", "rubrics": rubric}]}).endswith(
        "Shorten the criterion's rubric or ask for fewer max_tokens.")
    # a taxonomy criterion's rubric is no client's to shorten, however long beside a short answer
    request = parse_judge_request({"items": [GOOD_ITEM]})
    (job,) = build_jobs(request, qwen_tokenizer, max_model_len=8192, max_tokens=64)
    with pytest.raises(RequestError) as err:
        build_jobs(request, qwen_tokenizer, max_model_len=len(job.prompt_ids) + 63, max_tokens=64)
    assert str(err.value).endswith("Shorten the answer or ask for fewer max_tokens."), err.value
    assert refusal({**GOOD_ITEM, "reference_answer": "слово " * 600}, check_sizes).endswith(
        "Shorten the reference answer.")


def test_the_character_check_names_the_item_when_its_own_text_is_the_part_to_shorten():
    """An item whose answer alone is too long, judged on a custom criterion with a short rubric, is refused naming
    ``items[0]`` (its field and its message's start), as it is on taxonomy criteria: not the criterion, which has
    nothing to shorten, while the message says "Shorten the answer". Under ``"oversize": "fail"`` that refusal is
    every one of its criteria's failure. A rubric that is itself the longest part is named by its criterion."""
    from serve.jobs import check_sizes

    short = {"name": "Своё", "rubrics": "0: нет\n1: да"}
    rubric = "\n\n".join(f"{level}: " + "очень подробное описание уровня " * 60 for level in (0, 1))

    def refusal(item, oversize="refuse"):
        request = parse_judge_request({"items": [item], "oversize": oversize})
        if oversize == "fail":
            return check_sizes(request, max_model_len=512, max_tokens=64, reserve=0, chars_per_token=4,
                               oversize="fail")[0]
        with pytest.raises(RequestError) as err:
            check_sizes(request, max_model_len=512, max_tokens=64, reserve=0, chars_per_token=4)
        return err.value

    long_answer = {**GOOD_ITEM, "answer": "слово " * 600, "criteria": ["Креативность", short]}
    for err in (refusal(long_answer), refusal(long_answer, "fail")):
        assert err.param == "items[0]" and err.message.startswith("items[0]: "), err.message
        assert err.message.endswith("Shorten the answer.")
    err = refusal({**GOOD_ITEM, "criteria": [short, {"name": "Подробный", "rubrics": rubric}]})
    assert err.param == "items[0].criteria[1]" and err.message.endswith("Shorten the criterion's rubric."), err.message


def test_oversize_fail_marks_the_judgments_that_cannot_fit_and_keeps_the_rest(qwen_tokenizer):
    """``"oversize": "fail"`` (the reward paths): the judgment the default refuses becomes a job marked ``too_long``
    with the refusal's message, the item that fits is judged as before; an item whose text alone is over the
    character bound is never rendered (``check_sizes`` reports it, its criteria become marked jobs)."""
    from serve.jobs import check_sizes

    request = parse_judge_request({"items": [GOOD_ITEM, {**GOOD_ITEM, "answer": "слово " * 200},
                                             {**GOOD_ITEM, "answer": "слово " * 600}], "oversize": "fail"})
    assert request.oversize == "fail"
    jobs = build_jobs(request, qwen_tokenizer, max_model_len=512, max_tokens=64, oversize="fail")
    fits, = [j for j in jobs if j.item == 0]
    cut, = [j for j in jobs if j.item == 1]
    alone, = [j for j in jobs if j.item == 2]  # over the budget by its answer alone: never rendered
    assert fits.too_long is None and fits.prompt_ids
    assert cut.prompt_ids == [] and re.match(r"items\[1\]\.criteria\[0\]: the prompt .* tokens.*context of 512",
                                             cut.too_long)
    assert (alone.prompt, alone.prompt_ids) == ("", []) and alone.too_long.startswith("items[2]: its instruction")
    huge = parse_judge_request({"items": [GOOD_ITEM, {**GOOD_ITEM, "answer": "b" * 10_000}], "oversize": "fail"})
    too_long = check_sizes(huge, max_model_len=512, max_tokens=64, reserve=0, chars_per_token=10, oversize="fail")
    assert list(too_long) == [1] and too_long[1].message.startswith("items[1]: 10")
    jobs = build_jobs(huge, qwen_tokenizer, max_model_len=512, max_tokens=64, oversize="fail", too_long=too_long)
    assert [(j.item, j.prompt, j.too_long is not None) for j in jobs][1:] == [(1, "", True)]
    with pytest.raises(RequestError, match=r"^items\[1\]: 10"):  # the default still refuses
        check_sizes(huge, max_model_len=512, max_tokens=64, reserve=0, chars_per_token=10)


def test_too_many_judgments(qwen_tokenizer):
    """More (item, criterion) pairs than allowed is refused before any tokenizing, and before any named criterion
    is resolved: a custom rubric with no readable scale among them is not read (its refusal would name it)."""
    request = parse_judge_request({"items": [{**GOOD_ITEM, "criteria": ["Креативность"] * 3}] * 2})
    with pytest.raises(RequestError, match="6 .* at most 5") as err:
        build_jobs(request, qwen_tokenizer, max_model_len=2048, max_tokens=64, max_judgments=5)
    assert err.value.param == "items"
    unreadable = {"name": "Своя", "rubrics": "оцените как хотите"}
    request = parse_judge_request({"items": [{**GOOD_ITEM, "criteria": [unreadable] + ["Креативность"] * 5}]})
    with pytest.raises(RequestError, match="6 .* at most 5"):
        build_jobs(request, qwen_tokenizer, max_model_len=2048, max_tokens=64, max_judgments=5)


def test_level_tokens(qwen_tokenizer):
    """Scale levels 0..4 are single Qwen tokens; a 0..10 scale is not, nor the pairwise -1, 0, 1 ("-1" is two): no
    expected score then, as docs/serving.md says."""
    ids = level_token_ids(qwen_tokenizer, Scale.range(0, 4))
    assert ids is not None and [qwen_tokenizer.decode([i]) for i in ids.values()] == ["0", "1", "2", "3", "4"]
    assert level_token_ids(qwen_tokenizer, Scale.range(0, 10)) is None
    assert level_token_ids(qwen_tokenizer, Scale((-1, 0, 1))) is None


# ------------------------------------------------------------------------------------------ score distributions

SCALE = Scale((0, 1, 2))
TOKENS = ["[", "FEEDBACK", "]", " ok", " 1", " [", "RESULT", "]", " ", "2", " [", "END", "]"]


def _lp(probs: dict[str, float]) -> dict[str, float]:
    return {token: math.log(p) for token, p in probs.items()}


def test_expected_score_by_hand():
    """p(0,1,2) = .1,.2,.5 (+.2 elsewhere): renormalised .125/.25/.625, expected 1.5, confidence .625, mass .8."""
    top = [None] * len(TOKENS)
    top[9] = _lp({"2": 0.5, "1": 0.2, "0": 0.1, "x": 0.2})
    dist = score_distribution(TOKENS, top, SCALE, 2.0)
    assert dist is not None
    assert dist.probs == pytest.approx({0: 0.125, 1: 0.25, 2: 0.625})
    assert (dist.expected, dist.confidence, dist.mass) == pytest.approx((1.5, 0.625, 0.8))


def test_expected_score_missing_level_counts_as_zero():
    """A level absent from the returned log-probabilities has probability 0."""
    top = [None] * len(TOKENS)
    top[9] = _lp({"2": 0.6, "1": 0.2})
    dist = score_distribution(TOKENS, top, SCALE, 2.0)
    assert dist.probs == pytest.approx({0: 0.0, 1: 0.25, 2: 0.75}) and dist.expected == pytest.approx(1.75)


@pytest.mark.parametrize(
    ("tokens", "score", "why"),
    [
        (TOKENS, 1.0, "the written score is 2; the 1 in the feedback is not after [RESULT]"),
        (TOKENS, 1.5, "not a level"),
        (["2"], 2.0, "no [RESULT] before it"),
    ],
)
def test_no_distribution(tokens, score, why):
    """No distribution unless the written level follows [RESULT]."""
    top = [_lp({"0": 0.3, "1": 0.3, "2": 0.4})] * len(tokens)
    assert score_distribution(tokens, top, SCALE, score) is None, why


def test_distribution_after_markdown_result_tag():
    """`**[RESULT]** 1` is found like `[RESULT] 1`."""
    tokens = ["**", "[", "RESULT", "]**", " ", "1", " [END]"]
    top = [None] * len(tokens)
    top[5] = _lp({"0": 0.25, "1": 0.5, "2": 0.25})
    assert score_distribution(tokens, top, SCALE, 1.0).expected == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------ output format

def test_verdict_regex_accepts_the_training_targets():
    """The constrained-decoding format accepts exactly what training targets look like."""
    seq2seq = re.compile(verdict_regex(SCALE, 40, with_score=True))
    assert seq2seq.fullmatch(judge.render_target("Ответ точен.", 2))
    assert not seq2seq.fullmatch(judge.render_target("Ответ точен.", 3))
    assert not seq2seq.fullmatch(judge.render_target("x" * 41, 1))
    regression = re.compile(verdict_regex(SCALE, 40, with_score=False))
    assert regression.fullmatch(judge.render_rationale_target("Ответ точен."))
    unbounded = re.compile(verdict_regex(SCALE, 0, with_score=True))
    assert unbounded.fullmatch(judge.render_target("x" * 5000, 0))


def test_criteria_auto_parses_and_resolves_to_the_choice_criteria():
    """"criteria": "auto" needs no task type; it resolves to the classifier's choice (taxonomy ids, in order);
    with no choice (a server without a classifier) it is a 400 naming the field; any other string is refused."""
    from judge.criteria_auto import TaskChoice
    from serve.schema import resolve_criteria

    request = parse_judge_request({"instruction": "Напиши стих.", "answer": "Стих.", "criteria": "auto"})
    (item,) = request.items
    choice = TaskChoice("Literary text", "Poetry", "", "Literary text / Poetry", 0.9,
                        (("Literary text / Poetry", 0.9),), ("creativity", "grammar"), False, "", "tfidf")
    tax = judge.load_taxonomy()
    resolved = resolve_criteria(item, 0, choice)
    assert [(r.id, r.name, r.rubrics) for r in resolved] == [
        (c, tax.criteria[c].name["ru"], tax.criteria[c].rubric("ru")) for c in ("creativity", "grammar")
    ]
    with pytest.raises(RequestError) as err:
        resolve_criteria(item, 0, None)
    assert err.value.param == "items[0].criteria" and "task classifier" in err.value.message
    with pytest.raises(RequestError) as err:
        parse_judge_request({"instruction": "x", "answer": "y", "criteria": "automatic"})
    assert err.value.param == "criteria"  # an inline body's field, named as it was sent
    # A task stated beside "auto" would be overridden by the guess: refused, saying what to send instead.
    (stated,) = parse_judge_request({"instruction": "x", "answer": "y", "criteria": "auto",
                                     "task_type": "Literary text"}).items
    with pytest.raises(RequestError, match=r"names its task \(task_type\): leave criteria out") as err:
        resolve_criteria(stated, 0, choice)
    assert err.value.param == "items[0].criteria"
    # A subtype sent alone is named as sent, not as a task_type the item does not have.
    (subtype_only,) = parse_judge_request({"instruction": "x", "answer": "y", "criteria": "auto",
                                           "task_subtype": "Poetry"}).items
    with pytest.raises(RequestError, match=r"names its task \(task_subtype\): .* or drop task_subtype$"):
        resolve_criteria(subtype_only, 0, choice)


# ------------------------------------------------------------------------------------------------ bounds before work


def test_an_answer_that_cannot_fit_is_refused_before_anything_is_rendered(qwen_tokenizer, monkeypatch):
    """A 1 MiB answer with 64 criteria is refused by the size check alone, naming the item: no prompt is rendered or
    tokenized (before: every criterion's prompt was, 92 s and +2 GB). The bound is the context's prompt tokens
    times the longest vocabulary entry (Qwen2.5: 128 characters), so no prompt that fits is refused by it."""
    import asyncio

    import serve.jobs as jobs
    import serve.judging as judging
    from judge.checkpoints import JudgeKind

    assert jobs.max_token_chars(qwen_tokenizer) == 128
    rendered = []
    monkeypatch.setattr(judge.prompts.PromptTemplate, "render", lambda self, fields, clean=False: rendered.append(fields) or "")
    criteria = [{"name": f"c{k}", "rubrics": "0: нет\n1: да"} for k in range(64)]
    request = parse_judge_request({"items": [{"instruction": "Ответь", "answer": "я" * (1 << 20), "criteria": criteria}]})
    settings = judging.JudgeSettings(model_name="tiny", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "gen"},
                                     max_model_len=4096, max_tokens=64, temperature=0.0, score_logprobs=False,
                                     lenient=False, constrained=False, feedback_max_chars=0, max_judgments=512)  # fmt: skip
    server = judging.Judge(settings, qwen_tokenizer, None, None, asyncio.Semaphore(1))
    with pytest.raises(RequestError) as err:
        asyncio.run(server.run(request))
    assert (err.value.status, err.value.code) == (400, "context_length_exceeded")
    assert err.value.param.startswith("items[0]") and err.value.message.startswith(err.value.param)
    assert f"at most {(4096 - 64) * 128} characters" in err.value.message
    assert rendered == []


def test_a_text_just_within_the_character_bound_reaches_tokenizing():
    """The size check refuses only what cannot fit: a text at the bound passes it (the token count decides)."""
    from serve.jobs import check_sizes

    request = parse_judge_request({"items": [{"instruction": "a", "answer": "b" * 99, "criteria": ["Креативность"]}]})
    check_sizes(request, max_model_len=20, max_tokens=10, reserve=0, chars_per_token=10)  # 100 characters == 10 x 10
    with pytest.raises(RequestError, match=r"^items\[0\]: 101 characters"):
        request = parse_judge_request({"items": [{"instruction": "a", "answer": "b" * 100, "criteria": ["Креативность"]}]})
        check_sizes(request, max_model_len=20, max_tokens=10, reserve=0, chars_per_token=10)


ANSWER_ENDINGS = ["Роза красная", "Конец.  ", "Вопрос?!\n", "tabs\t\t", "emoji 🙂", "й" + "\u0306", "\n\n", "",
                  "код: `x = 1`\n\n###", "1234567", "слово   \n \n"]  # fmt: skip


#: (template, tokenizer fixture, thinking): the POLLUX prompt as the 7B/32B judges and exports get it, and the released
#: Pollux-4B-Judge's own (one newline longer) as it gets it, Qwen3's template with thinking on.
TEMPLATES = [(judge.prompts.POLLUX_PROMPT, "qwen_tokenizer", False),
             (judge.prompts.POLLUX_4B_PROMPT, "qwen3_tokenizer", True)]


@pytest.mark.parametrize(("template", "tokenizer", "thinking"), TEMPLATES, ids=["pollux-ru-v2", "pollux-ru-4b-v1"])
@pytest.mark.parametrize("ending", ANSWER_ENDINGS, ids=range(len(ANSWER_ENDINGS)))
def test_the_shared_prefix_tokenized_once_gives_the_whole_prompts_ids(request, monkeypatch, template, tokenizer,
                                                                     thinking, ending):
    """Tokenizing an item's shared part once and each criterion's part apart, the request's text apart from the chat
    template's (``judge.chat_tokens.chat_ids``), gives exactly the ids of tokenizing each whole chat-wrapped prompt, whatever
    the answer ends with (spaces, punctuation, newlines, emoji, a combining mark, a '###' of its own), for taxonomy
    and custom criteria alike, and for both pointwise templates (the 4B's criterion part ends in a newline, next to
    the chat template's end of turn): an ordinary prompt's ids are what they were before the request's text was read
    with its special-token strings as text."""
    import judge.chat_tokens

    qwen_tokenizer = request.getfixturevalue(tokenizer)

    criteria = ["Креативность", "Грамотность", {"name": "Своя", "rubrics": "0: нет\n\n1: да"}]
    body = {"items": [{"instruction": "Напиши стих", "answer": "Начало. " + ending, "criteria": criteria},
                      {"instruction": "Ответь", "answer": "x" + ending, "reference_answer": "эталон\n", "criteria": criteria[:2]}]}  # fmt: skip

    texts: list[str] = []  # every text of the request's tokenized
    request_ids = judge.chat_tokens._Encoder.request_ids
    monkeypatch.setattr(judge.chat_tokens._Encoder, "request_ids", lambda self, batch: (texts.extend(batch),
                                                                                 request_ids(self, batch))[1])
    jobs = build_jobs(parse_judge_request(body), qwen_tokenizer, max_model_len=4096, max_tokens=64, thinking=thinking,
                      template=template)
    assert len(jobs) == 5
    assert sum("Напиши стих" in text for text in texts) == 1  # the first item's shared part, tokenized once
    for job in jobs:
        assert job.prompt == template.render(job.text)
        chat = judge.apply_chat(qwen_tokenizer, job.prompt, thinking=thinking)
        whole = qwen_tokenizer(chat, add_special_tokens=False)["input_ids"]
        assert job.prompt_ids == whole, job.criterion.name
    # one list of the shared part per item, held by each of its jobs (not a copy per criterion while they wait for
    # the engine), and each job's own ids only what follows it
    for item in (0, 1):
        first, *others = [job for job in jobs if job.item == item]
        assert first.prefix_ids and all(job.prefix_ids is first.prefix_ids for job in others)
        assert all(job.n_prompt_tokens == len(job.prefix_ids) + len(job.own_ids) == len(job.prompt_ids)
                   for job in (first, *others))


def test_a_custom_criterions_name_counts_in_the_character_bound_and_is_clipped_in_messages(qwen_tokenizer):
    """A custom criterion's name is in its prompt: a 2 MB name is refused before rendering (it once passed the
    bound, which counted rubrics only), and a refusal names a long criterion by its first characters and length."""
    from serve.jobs import check_sizes

    item = {"instruction": "a", "answer": "b", "criteria": [{"name": "н" * 2_000_000, "rubrics": "0: нет\n\n1: да"}]}
    with pytest.raises(RequestError, match=r"^items\[0\]\.criteria\[0\]: 20000\d\d characters"):
        check_sizes(parse_judge_request({"items": [item]}), max_model_len=4096, max_tokens=64, reserve=0,
                    chars_per_token=128)
    long_name = {**item, "criteria": [{"name": "н" * 5000, "rubrics": "0: нет\n\n1: да"}]}
    with pytest.raises(RequestError) as err:
        build_jobs(parse_judge_request({"items": [long_name]}), qwen_tokenizer, max_model_len=512, max_tokens=64)
    assert "... [5000 characters]" in err.value.message and len(err.value.message) < 400


def test_an_auto_item_too_long_to_read_fails_unclassified_under_oversize_fail(qwen_tokenizer):
    """``"criteria": "auto"`` takes its criteria from classifying the item's text. Under ``oversize: fail`` an item
    too long to read is that item's failure, as with named criteria (it refused the whole request, naming the item):
    never classified, it stands on a failed choice's criteria (those for any text), each a failed job never
    rendered; the other item is planned as before. Under the default it is refused, naming it."""
    from judge.criteria_auto import TaskChoice
    from serve.jobs import check_sizes, plan_jobs

    items = [{"instruction": "a", "answer": "b" * 10_000, "criteria": "auto"},
             {"instruction": "a", "answer": "b", "criteria": "auto"}]
    request = parse_judge_request({"items": items, "oversize": "fail"})
    too_long = check_sizes(request, max_model_len=512, max_tokens=64, reserve=0, chars_per_token=10, oversize="fail")
    plan = plan_jobs(request, qwen_tokenizer, max_model_len=512, max_tokens=64, classifying=True, oversize="fail",
                     too_long=too_long)
    assert plan.to_classify == (1,)  # only the item that fits is classified
    fallback = TaskChoice.failed("", "").criteria
    assert list(plan.unclassified) == [0] and plan.unclassified[0].criteria == fallback
    assert plan.unclassified[0].reason == "too long for the judge's context: not classified"
    failed = [job for job in plan.complete({1: TaskChoice.failed("the classifier's stand-in", "test")}) if job.item == 0]
    assert len(failed) == len(fallback) and all(job.prompt_ids == [] for job in failed)
    assert {job.too_long for job in failed} == {too_long[0].message} and too_long[0].message.startswith("items[0]: 10001")
    with pytest.raises(RequestError, match=r"^items\[0\]: 10001 characters"):
        check_sizes(request, max_model_len=512, max_tokens=64, reserve=0, chars_per_token=10)


def test_a_pair_too_long_to_fit_is_refused_before_anything_is_rendered(qwen_tokenizer):
    """A pairwise request gets the items' character bound: a pair whose texts cannot be that few tokens is refused
    naming it, and the tokenizer is never asked (the answers could be the whole 8 MB body)."""
    from judge.wire import PairwiseRequest
    from serve.jobs import build_pair_jobs

    class NeverCalled:
        def __getattr__(self, name):
            raise AssertionError(f"the tokenizer was used: {name}")

    pair = {"instruction": "a", "answer_1": "b" * 5000, "answer_2": "c", "rubrics": "-1: 1 лучше\n\n0: равны\n\n1: 2 лучше"}
    request = PairwiseRequest.model_validate({"pairs": [pair]})
    with pytest.raises(RequestError, match=r"^pairs\[0\]: 50\d\d characters") as err:
        build_pair_jobs(request, NeverCalled(), max_model_len=512, max_tokens=64, thinking=False, chars_per_token=10)
    assert err.value.code == "context_length_exceeded"
    (failed,) = build_pair_jobs(request, NeverCalled(), max_model_len=512, max_tokens=64, thinking=False,
                                chars_per_token=10, oversize="fail")  # its failed result, still never rendered
    assert failed.too_long == err.value.message and failed.prompt_ids == [] and failed.item == 0
    (job,) = build_pair_jobs(PairwiseRequest.model_validate({"pairs": [{**pair, "answer_1": "b"}]}), qwen_tokenizer,
                             max_model_len=512, max_tokens=64, thinking=False, chars_per_token=10)
    assert job.prompt_ids


def test_an_items_criteria_render_one_whole_prompt_not_one_each(qwen_tokenizer, monkeypatch):
    """64 criteria on one long answer: the chat template wraps one whole prompt holding the answer for the item (to
    check it wraps the prompt verbatim; each criterion's own part is checked behind a short stand-in), not 64; only
    the item's shared part holds the answer among the texts tokenized; every job's ids are still its whole prompt's,
    and its prompt renders on demand."""
    answer = "Роза красная. " * 2000
    criteria = [{"name": f"Критерий {k}", "rubrics": "0: нет\n\n1: да"} for k in range(64)]
    request = parse_judge_request({"items": [{"instruction": "Напиши стих", "answer": answer, "criteria": criteria}]})

    class Spy:  # the tokenizer, counting chat-template calls and the texts tokenized
        def __init__(self):
            self.wrapped, self.texts = 0, []

        def __getattr__(self, name):
            return getattr(qwen_tokenizer, name)

        def apply_chat_template(self, messages, *args, **kwargs):
            self.wrapped += any(answer in m["content"] for m in messages)
            return qwen_tokenizer.apply_chat_template(messages, *args, **kwargs)

        def __call__(self, texts, **kwargs):
            self.texts += texts
            return qwen_tokenizer(texts, **kwargs)

    import judge.chat_tokens

    spy = Spy()
    request_ids = judge.chat_tokens._Encoder.request_ids  # the request's text (judge.chat_tokens.chat_ids) is tokenized there
    monkeypatch.setattr(judge.chat_tokens._Encoder, "request_ids", lambda self, batch: (spy.texts.extend(batch),
                                                                                 request_ids(self, batch))[1])
    jobs = build_jobs(request, spy, max_model_len=32768, max_tokens=64)
    assert len(jobs) == 64 and spy.wrapped == 1
    assert sum(answer in text for text in spy.texts) == 1
    for job in (jobs[0], jobs[37]):
        assert isinstance(job.text, dict) and job.prompt == judge.render_prompt({**job.text})
        whole = qwen_tokenizer(judge.apply_chat(qwen_tokenizer, job.prompt), add_special_tokens=False)["input_ids"]
        assert job.prompt_ids == whole


def test_a_template_that_trims_its_content_still_gets_each_whole_prompts_ids(qwen_tokenizer):
    """A chat template that trims the user's text (as Llama-3's and Gemma's do) changes a rubric's trailing spaces:
    a criterion whose rubric ends in spaces goes the whole-text way even when the item's first criterion passed the
    verbatim check, so every job's ids are its whole prompt's."""
    trimming = qwen_tokenizer.chat_template.replace("message['content']", "message['content'] | trim")
    assert trimming != qwen_tokenizer.chat_template

    class Trimming:  # the tokenizer with a template that trims
        chat_template = trimming

        def __getattr__(self, name):
            return getattr(qwen_tokenizer, name)

        def apply_chat_template(self, *args, **kwargs):
            return qwen_tokenizer.apply_chat_template(*args, chat_template=trimming, **kwargs)

        def __call__(self, *args, **kwargs):
            return qwen_tokenizer(*args, **kwargs)

    spy = Trimming()
    criteria = [{"name": "A", "rubrics": "0: нет\n\n1: да"}, {"name": "B", "rubrics": "0: нет\n\n1: да  \n"},
                {"name": "C", "rubrics": " 0: x\n1: y\n"}]
    request = parse_judge_request({"items": [{"instruction": "Напиши стих", "answer": "Роза.", "criteria": criteria}]})
    jobs = build_jobs(request, spy, max_model_len=4096, max_tokens=64)
    for job in jobs:
        whole = qwen_tokenizer(judge.apply_chat(spy, job.prompt), add_special_tokens=False)["input_ids"]
        assert job.prompt_ids == whole, job.criterion.name


def test_the_level_token_ids_kept_are_bounded(qwen_tokenizer):
    """A judge keeps the level token ids of the LEVEL_IDS_KEPT scales used last: each distinct custom scale a
    client sent was kept for good (a request of 512 custom ranges added ~1.8 MB). A scale in use stays, and gives the
    ids it gave before."""
    import asyncio

    from serve.judging import LEVEL_IDS_KEPT, Judge, JudgeSettings

    settings = JudgeSettings(model_name="m", kind="seq2seq", engine_models={"generator": "m"}, max_model_len=2048,
                             max_tokens=16, temperature=0.0, score_logprobs=True, lenient=False, constrained=False,
                             feedback_max_chars=0, max_judgments=512)
    judge_ = Judge(settings, qwen_tokenizer, generator=None, pooler=None, limit=asyncio.Semaphore(1))
    usual = judge_._levels(Scale((0, 1, 2)))
    for low in range(1000, 1000 + 2 * LEVEL_IDS_KEPT):
        judge_._levels(Scale(tuple(range(low, low + 3))))
        assert judge_._levels(Scale((0, 1, 2))) == usual  # used all along: never the one dropped
    assert len(judge_._level_ids) == LEVEL_IDS_KEPT
    assert usual == level_token_ids(qwen_tokenizer, Scale((0, 1, 2))) and len(usual) == 3


@pytest.mark.parametrize(("completion", "why"), [
    ({"choices": []}, "no choices"),
    ({}, "no choices"),
    ({"choices": "x"}, "no choices"),
    ({"choices": [["x"]]}, "choices[0] is a list"),
    ({"choices": [None]}, "choices[0] is null"),
    ({"choices": [{"text": 5}]}, "choices[0].text is an integer"),
    ({"choices": [{"text": {"content": "x"}}]}, "choices[0].text is an object"),
    ({"choices": [{"text": "x", "logprobs": {"tokens": ["1"], "top_logprobs": []}}]}, "logprobs are not vLLM's"),
    ({"choices": [{"text": "x", "logprobs": {"tokens": ["1"], "top_logprobs": [{"1": "a"}]}}]}, "logprobs are not"),
    # an integer past float's range (JSON reads any size): math.isfinite raised OverflowError, a 500
    ({"choices": [{"text": "x", "logprobs": {"tokens": ["1"], "top_logprobs": [{"1": -10**400}]}}]}, "logprobs are not"),
    ({"choices": [{"text": "x", "logprobs": []}]}, "logprobs are not vLLM's"),
    ({"choices": [{"text": None, "finish_reason": "stop"}], "usage": "x"}, None),  # no text, no usage: read as such
    ({"choices": [{"text": "x", "logprobs": {"tokens": ["1"], "top_logprobs": [None]}}], "usage": {}}, None),
])  # fmt: skip
def test_an_engine_answer_that_is_no_completion_is_a_502_naming_why(completion, why):
    """What judge-serve reads of an engine's 200 to /v1/completions: an answer without a choice, with a text that is
    no string or logprobs of another shape is an EngineFailure (502) naming why, never an IndexError (500); what
    vLLM may leave out (a text, the usage) reads as empty."""
    from serve.engine_client import EngineFailure
    from serve.judging import _completion_parts, _logprobs_of

    if why is None:
        choice, text, usage = _completion_parts(completion)
        _logprobs_of(choice, completion)
        assert (text, usage) == (completion["choices"][0]["text"] or "", {})
        return
    with pytest.raises(EngineFailure) as err:
        choice, _, _ = _completion_parts(completion)
        _logprobs_of(choice, completion)
    assert err.value.status == 502 and why in err.value.public


def test_an_engine_text_holding_lone_surrogates_reads_as_vllm_would_have_written_it():
    """JSON can escape a lone surrogate ("\\ud800"), which no UTF-8 answer can carry; vLLM writes bytes that are no
    text as U+FFFD, and so does judge-serve read an engine's text that holds one (else echoed in a feedback it made
    the whole answer a 500)."""
    from serve.judging import _completion_parts

    completion = json.loads('{"choices": [{"text": "[FEEDBACK] \\ud800 и \\udcff. [RESULT] 2 [END]"}]}')
    assert _completion_parts(completion)[1] == "[FEEDBACK] \ufffd и \ufffd. [RESULT] 2 [END]"


# ------------------------------------------------------------------- a prompt whose chat template opened reasoning


class _ThinkingTemplateTokens:
    """A tokenizer whose id 2 is a thinking-always template's "<think>\\n" (the generation prompt's end) and whose
    levels are one token each (ids from 100)."""

    TEXT = {1: "<|im_start|>assistant\n", 2: "<think>\n", 3: "Оцени ответ."}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [100 + int(text)] if text.isdigit() else [7, 8]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return "".join(self.TEXT[i] for i in ids)


class _RecordingGenerator:
    """The generating engine at the network boundary: records each /v1/completions body, answers ``text``."""

    def __init__(self, text: str):
        self.text, self.payloads = text, []

    async def post(self, path: str, payload: dict, request_id: str = "") -> dict:
        assert path == "/v1/completions"
        self.payloads.append(payload)
        return {"choices": [{"text": self.text, "finish_reason": "stop"}], "usage": {"completion_tokens": 9}}


def _thinking_judge(text: str, constrained: bool):
    import asyncio
    from collections import OrderedDict

    from judge.checkpoints import JudgeKind
    from serve.judging import Judge, JudgeSettings

    judge_ = object.__new__(Judge)  # no tokenizer copy thread, no engines
    judge_.settings = JudgeSettings(model_name="m", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "m"},
                                    max_model_len=2048, max_tokens=64, temperature=0.0, score_logprobs=False,
                                    lenient=False, constrained=constrained, feedback_max_chars=0, max_judgments=8)
    judge_.tokenizer, judge_._level_ids = _ThinkingTemplateTokens(), OrderedDict()
    judge_.generator, judge_.limit = _RecordingGenerator(text), asyncio.Semaphore(1)
    return judge_


@pytest.mark.parametrize("constrained", [True, False])
def test_a_tagged_judge_whose_prompt_opened_reasoning_is_asked_for_the_block_close_and_not_stopped_at_end(constrained):
    """On a thinking-always template the output starts inside the reasoning the prompt opened: the verdict regex
    closes that block first (the empty block a tagged target is trained after), else every constrained verdict,
    read after the prompt's <think>, was unclosed_think; and no "[END]" stop, which a drafted "[END]" inside the
    reasoning would hit before the verdict. The output the regex allows scores."""
    import asyncio

    from serve.jobs import Job
    from serve.judging import JudgeOptions
    from serve.schema import ResolvedCriterion

    output = "\n</think>\n\n" + judge.render_target("Ответ верный.", 2)
    judge_ = _thinking_judge(output, constrained)
    job = Job(0, 0, ResolvedCriterion("Критерий", "rubrics", SCALE, None), "Оцени ответ.", [3, 1, 2])
    options = JudgeOptions(max_tokens=64, temperature=0.0, lenient=False, constrained=constrained)
    (result,) = asyncio.run(judge_._judge_jobs([job], options))
    [payload] = judge_.generator.payloads
    assert "stop" not in payload and "include_stop_str_in_output" not in payload
    assert payload["prompt"] == [3, 1, 2]
    if constrained:
        regex = payload["structured_outputs"]["regex"]
        assert regex == r"\n{0,2}</think>\n{0,2}\[FEEDBACK\] [^\[\]]+ \[RESULT\] (0|1|2) \[END\]"
        assert re.fullmatch(regex, output)
        assert not re.fullmatch(regex, judge.render_target("Ответ верный.", 2))  # the verdict with no close
    else:
        assert "structured_outputs" not in payload
    assert (result.score, result.parse_ok, result.feedback) == (2.0, True, "Ответ верный.")


def test_a_prompt_that_opened_no_reasoning_keeps_the_end_stop_and_the_plain_regex():
    """The same judge on a prompt that ends in the assistant turn's opening: the request is as before."""
    import asyncio

    from serve.jobs import Job
    from serve.judging import JudgeOptions
    from serve.schema import ResolvedCriterion

    judge_ = _thinking_judge(judge.render_target("Ответ верный.", 1), True)
    job = Job(0, 0, ResolvedCriterion("Критерий", "rubrics", SCALE, None), "Оцени ответ.", [2, 3, 1])
    options = JudgeOptions(max_tokens=64, temperature=0.0, lenient=False, constrained=True)
    (result,) = asyncio.run(judge_._judge_jobs([job], options))
    [payload] = judge_.generator.payloads
    assert (payload["stop"], payload["include_stop_str_in_output"]) == (["[END]"], True)
    assert payload["structured_outputs"] == {"regex": verdict_regex(SCALE, 0, with_score=True)}
    assert (result.score, result.parse_ok) == (1.0, True)


PAIR = {"instruction": "Что больше, 2 или 3?", "answer_1": "3", "answer_2": "2"}


@pytest.mark.parametrize("rubrics", [
    "1: первый лучше\n2: одинаково\n3: второй лучше", "0: первый лучше\n1: второй лучше",
    # level lines scale_of cannot read as one scale still state 1/2/3: the reader's words name what it saw
    "1) первый лучше\n2 - одинаково\n3: второй лучше", "1: первый лучше\n2: одинаково\n2: второй лучше",
    "\u0661: первый\n\u0662: одинаково\n\u0663: второй",
])  # fmt: skip
def test_a_pairwise_scale_written_on_other_levels_is_refused_naming_it(rubrics):
    """A pair's verdict is read on -1/0/1: a scale shown to the judge on other levels would have its "1" (answer 1
    better on the scale shown) read as answer 2 better, or its "0" (answer 1) as a tie. Refused, naming the pair's
    rubrics, before anything is judged."""
    with pytest.raises(RequestError) as err:
        parse_judge_request({"pairs": [{**PAIR, "rubrics": "-1: первый\n0: одинаково\n1: второй"},
                                       {**PAIR, "rubrics": rubrics}]})
    assert (err.value.status, err.value.param) == (400, "pairs[1].rubrics")
    assert "-1 (answer 1 better), 0 (a tie) or 1 (answer 2 better)" in err.value.message


#: The POLLUX demo's side-by-side rubric (ai-forever/POLLUX ``demo/pollux-demo.html``, ``sbs-rubric``).
DEMO_SBS_RUBRIC = ("-1: Answer 1 better satisfies the criterion.\n\n0: The two answers are equally good.\n\n"
                   "1: Answer 2 better satisfies the criterion.")


@pytest.mark.parametrize("rubrics", [
    "Какой ответ точнее?\n-1: первый\n0: одинаково\n1: второй",
    "Сравните ответы: минус один, если лучше первый, ноль, если равны",
    DEMO_SBS_RUBRIC,
    # a criterion's own 0/1/2 lines folded in before the comparison's: scale_of refuses them as out of order
    "Критерий: Точность\n0: неточно\n1: отчасти\n2: точно\n\nШкала сравнения:\n-1: первый лучше\n0: одинаково\n"
    "1: второй лучше",
    "Критерий оценивается от 0 до 2.\n-1: первый лучше\n0: одинаково\n1: второй лучше",
    "-1: первый лучше\n1: второй лучше",  # no tie: each level means on the wire what it meant as shown
])  # fmt: skip
def test_a_pairwise_scale_on_minus_one_to_one_or_in_prose_is_judged(rubrics):
    """The -1/0/1 scale (the demo's, or with its criterion, its criterion's levels or a range before it), the -1/1
    scale with no tie, and a scale in prose (no level lines: it states no other scale) are taken as they are."""
    request = parse_judge_request({"pairs": [{**PAIR, "rubrics": rubrics}]})
    assert request.pairs[0].rubrics == rubrics


BOUND_WORDS = [
    ({"items": [GOOD_ITEM], "temperature": 2.5}, "temperature: must be at most 2, got a number 2.5"),
    ({"items": [GOOD_ITEM], "temperature": -0.5}, "temperature: must be at least 0, got a number -0.5"),
    ({"items": [GOOD_ITEM], "max_tokens": 0}, "max_tokens: must be at least 1, got an integer 0"),
    ({"items": []}, "items: must hold at least 1 entry, got an empty list"),
    ({"pairs": []}, "pairs: must hold at least 1 entry, got an empty list"),
    ({"items": [{**GOOD_ITEM, "criteria": [{"name": "", "rubrics": "0: a\n1: b"}]}]},
     "items[0].criteria[0].name: must not be empty"),
    ({"items": [GOOD_ITEM], "oversize": "x"}, "oversize: must be one of 'refuse' or 'fail', got a string 'x'"),
]


@pytest.mark.parametrize(("body", "message"), BOUND_WORDS, ids=[m.split(":")[0] for _, m in BOUND_WORDS])
def test_a_value_past_its_bound_is_told_the_bound_in_jsons_words(body, message):
    """A number or list past its field's bound is told the bound and what was sent, as a wrong kind is ("must be a
    string, got an integer 5"), not in pydantic's words ("List should have at least 1 item after validation")."""
    with pytest.raises(RequestError) as err:
        parse_judge_request(body)
    assert err.value.message == message


@pytest.mark.parametrize(("entry", "got"), [(["x"], "a list"), (None, "null"), (7, "an integer 7"), (True, "true")])
def test_a_criterion_of_neither_kind_is_told_both_kinds_it_may_be(entry, got):
    """A criterion is a taxonomy name or id (a string) or a custom {name, rubrics} object: one of neither kind is told
    both, as a rubric of neither kind is, not "must be a string" alone, which hides the custom criterion."""
    with pytest.raises(RequestError) as err:
        parse_judge_request({"items": [GOOD_ITEM, {**GOOD_ITEM, "criteria": ["Креативность", entry]}]})
    assert err.value.param == "items[1].criteria[1]"
    assert err.value.message == (f"items[1].criteria[1]: must be a criterion's name or id (a string) or a "
                                 f"{{name, rubrics}} object, got {got}")
    inline = {**GOOD_ITEM, "criteria": [entry]}
    with pytest.raises(RequestError) as err:
        parse_judge_request(inline)
    assert err.value.message.startswith("criteria[0]: must be a criterion's name or id (a string) or a ")
