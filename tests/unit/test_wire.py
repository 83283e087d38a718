"""The wire formats tie writer to reader: judge-serve's ``/v1/judge`` result (``judge.JudgeResult``) as judge-eval
reads it, and the predictions row (``eval.judging.predictions.PredictionRow``) as run writes and score reads it.

judge-serve's real ``Judge`` runs here against scripted engines on 127.0.0.1 (the network boundary: a vLLM
``/v1/completions`` and a pooling ``/classify``), its response goes through JSON, and eval's real reader takes it.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

import judge
from eval.judging.backends import JudgeServeBackend
from eval.judging.predictions import PREDICTION_FIELDS, PredictionRow, read_predictions
from judge.plumbing.journal import JournalWriter
from judge.wire import JUDGE_RESULT_FIELDS, JudgeResult, ScoreSource
from tests.support.judge_in_process import judge_settings, judged

RUBRICS = "0: плохо\n\n1: средне\n\n2: хорошо"
REQUEST = {"items": [{"id": "q1", "instruction": "Напиши стих.", "answer": "Роза красная.",
                      "criteria": [{"name": "Рифма", "rubrics": RUBRICS}, {"name": "Ритм", "rubrics": RUBRICS}]}]}
OUTPUTS = {"seq2seq": "[FEEDBACK] Рифма есть. [RESULT] 1 [END]", "regression": "[FEEDBACK] Рифма есть. [END]"}
HEAD_VALUE = 2.7  # the scripted head's raw score: clipped to 2 on the 0..2 scale


def _respond(kind: str):
    """A scripted generator writing ``OUTPUTS[kind]`` and a pooling head answering ``HEAD_VALUE``."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path == "/classify":
            return 200, {"data": [{"probs": [HEAD_VALUE]}]}
        return 200, {"choices": [{"text": OUTPUTS[kind], "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    return respond


def _serve(kind: str, tokenizer) -> dict:
    """What judge-serve's Judge answers for REQUEST, as it crosses the wire (through JSON)."""
    return judged(judge_settings(kind), tokenizer, REQUEST, _respond(kind))[0]


@pytest.mark.parametrize(
    ("kind", "score", "source", "regression_score"),
    [("seq2seq", 1.0, ScoreSource.VERDICT, None), ("regression", 2.0, ScoreSource.REGRESSION_HEAD, HEAD_VALUE)],
)
def test_what_serve_emits_is_what_eval_reads(qwen_tokenizer, tmp_path, kind, score, source, regression_score):
    """Each /v1/judge result has exactly JudgeResult's fields; eval reads it into a predictions row with the score,
    its source and the head's raw value, and score reads that row back unchanged."""
    body = _serve(kind, qwen_tokenizer)
    results = body["items"][0]["results"]
    assert len(results) == 2 and all(list(r) == list(JUDGE_RESULT_FIELDS) for r in results)
    assert body["usage"]["parsed"] == 2 and body["usage"]["prompt_tokens"] == 22

    rows = [PredictionRow(id=f"q1-{k}", judge="tiny", latency_s=0.5,
                          **JudgeServeBackend._outcome(JudgeResult.from_json(r))) for k, r in enumerate(results)]
    for row in rows:
        assert (row.score, row.parse_ok, row.score_source, row.regression_score) == (score, True, source,
                                                                                      regression_score)
        assert row.feedback == "Рифма есть." and row.raw_output == OUTPUTS[kind] and row.error is None
    JournalWriter(tmp_path / "predictions.jsonl").append(*(row.to_json() for row in rows))
    assert read_predictions(tmp_path) == [row.to_json() for row in rows]


def test_regression_result_round_trips_its_nested_fields(qwen_tokenizer):
    """from_json(to_json(result)) is the result again, the LM's own verdict and the usage included."""
    (result, _) = _serve("regression", qwen_tokenizer)["items"][0]["results"]
    typed = JudgeResult.from_json(result)
    assert typed.lm_verdict == judge.wire.LmVerdict(score=None, parse_ok=False, error="no_result",
                                                    error_reason="no [RESULT] tag in the output")
    assert typed.usage == judge.wire.JudgmentUsage(prompt_tokens=11, completion_tokens=7)
    assert typed.rationale_complete is True and JudgeResult.from_json(typed.to_json()) == typed


@pytest.mark.parametrize(("head", "shown"), [(float("nan"), "nan"), (float("inf"), "inf"), (None, "null"),
                                            ("0.5", "a string '0.5'"), ([1.0], "a list")])  # fmt: skip
def test_a_score_head_that_returns_no_number_is_a_counted_failure(qwen_tokenizer, tmp_path, head, shown):
    """A diverged regression head (vLLM sends its NaN as null): each result is a failed judgment, no_score, naming the
    head's value, the LM's own verdict beside it; the response is valid JSON and eval writes failed rows from it."""
    import json

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path == "/classify":
            return 200, {"data": [{"probs": [head]}]}
        return 200, {"choices": [{"text": OUTPUTS["regression"], "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    body, _ = judged(judge_settings("regression"), qwen_tokenizer, REQUEST, respond)
    json.loads(json.dumps(body, allow_nan=False))  # what a strict JSON client reads
    for result in body["items"][0]["results"]:
        assert (result["parse_ok"], result["score"], result["error"]) == (False, None, "no_score")
        assert result["error_reason"] == f"the score head returned {shown}, not a finite number"
        assert result["regression_score"] is None and result["rationale_complete"] is True
        row = JudgeServeBackend._outcome(JudgeResult.from_json(result))
        assert (row["parse_ok"], row["score"], row["error"]) == (False, None, "no_score")
    assert body["usage"]["parsed"] == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [({"surprise": 1}, r"unknown field\(s\) \['surprise'\]"),
     ({1: 2, "zz": 3}, r"unknown field\(s\) \[1, 'zz'\]"),  # a Python caller's mixed keys: sorting them raised
     ({"score_source": "regression"}, r"^result\.score_source: 'regression' is not one of verdict, regression_head$"),
     ({"criterion": None, "scale": None}, None), ({"criterion": None}, r"result\.criterion: required field is missing"),
     ({"usage": {"prompt_tokens": 1, "cached": 2}}, r"result\.usage: unknown field\(s\) \['cached'\]"),
     ({"lm_verdict": {"score": 1.0}}, r"result\.lm_verdict\.parse_ok: required field is missing"),
     # Values are checked against their fields' types: a server's text score would be scored downstream otherwise.
     ({"score": "4"}, r"result\.score: expected a number or null, got a string '4'"),
     ({"score": True}, r"result\.score: expected a number or null, got true$"),
     ({"parse_ok": 1}, r"result\.parse_ok: expected true or false, got an integer 1$"),
     ({"scale": [0, "1"]}, r"result\.scale\[1\]: expected an integer, got a string '1'"),
     ({"score_probs": {"0": "x"}}, r"result\.score_probs\['0'\]: expected a number, got a string 'x'"),
     ({"usage": {"prompt_tokens": 1.5}}, r"result\.usage\.prompt_tokens: expected an integer, got a number 1.5$"),
     ({"lm_verdict": 3}, r"result\.lm_verdict: expected an object or null, got an integer 3$"),
     ({"feedback": None}, r"result\.feedback: expected a string, got null$")],
)
def test_judge_result_refuses_what_it_does_not_know(change, message):
    """An unknown field or score source is refused by name; a missing (or null, where its type has no None)
    required field names the field; nested objects are read as strictly."""
    base = JudgeResult(criterion="c", criterion_id=None, scale=[0, 1]).to_json()
    data = {**base, **change}
    if message is None:
        data = {k: v for k, v in base.items() if k != "scale"}
        message = r"result\.scale: required field is missing"
    with pytest.raises(ValueError, match=message):
        JudgeResult.from_json(data)


def test_a_response_that_is_not_objects_or_has_values_of_the_wrong_type_names_where():
    """The envelope is read as strictly as its results: a result that is not an object, an item index that is text,
    a usage count that is not an integer; an id may be text, an integer or null (it echoes the request's)."""
    from judge.wire import JudgeResponse

    result = JudgeResult(criterion="c", criterion_id=None, scale=[0, 1], score=1.0, parse_ok=True).to_json()
    body = {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
            "verdict_format": "tagged", "prompt_version": "v", "items": [{"index": 0, "id": 7, "results": [result]}],
            "usage": {"judgments": 1, "parsed": 1, "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    assert JudgeResponse.from_json(body).items[0].results[0].score == 1.0
    # A null usage is tolerated, as before the values were typed (the default stands in).
    assert JudgeResult.from_json({**result, "usage": None}).usage == judge.wire.JudgmentUsage()
    for change, message in [({"items": [{"index": 0, "id": 7, "results": ["4"]}]},
                             r"items\[0\]\.results\[0\]: expected an object, got a string '4'"),
                            ({"items": [{"index": "0", "id": 7, "results": [result]}]},
                             r"items\[0\]\.index: expected an integer, got a string '0'"),
                            ({"usage": {**body["usage"], "parsed": "1"}}, r"usage\.parsed: expected an integer, got a string '1'"),
                            ({"created": 1.5}, r"response\.created: expected an integer, got a number 1.5$"),
                            # __post_init__'s check, named where it is like every other field
                            ({"items": [{"index": 0, "id": 7, "results": [{**result, "score_source": "x"}]}]},
                             r"response\.items\[0\]\.results\[0\]\.score_source: 'x' is not one of")]:
        with pytest.raises(ValueError, match=message):
            JudgeResponse.from_json({**body, **change})


def test_a_response_of_a_judge_kind_no_reader_knows_is_read_and_one_of_another_format_stops_the_run():
    """A newer judge-serve may name a kind this reader does not know (its ``judge_kind`` is information, the results
    carry their own score source): read as sent. A verdict format other than the run's is the server changing under
    the run: judge-eval's /v1/judge backend raises ``ServerChanged`` (the runner stops), not a per-batch failure."""
    from eval.judging.backends import ServerChanged
    from judge.wire import JudgeResponse
    from tests.support.judge_in_process import judged_by_judge_eval

    read = JudgeResponse.from_json({**_RESPONSE, "judge_kind": "pairwise"})
    assert read.judge_kind == "pairwise" and read.to_json() == {**_RESPONSE, "judge_kind": "pairwise"}
    records = [dataclasses.make_dataclass("R", ["id", "instruction", "answer", "reference_answer", "criteria_name",
                                                "rubrics"])("a", "i", "x", None, "c", "0: a\n\n1: b\n\n2: c")]
    with pytest.raises(ServerChanged, match=r"answered in the verdict format reasoning, but this run records "
                                            r"tagged for 'tiny'"):
        judged_by_judge_eval(records, {**_RESPONSE, "verdict_format": "reasoning"})


_RESPONSE_RESULT = JudgeResult(criterion="c", criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                               score_source=ScoreSource.VERDICT).to_json()
_RESPONSE = {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
             "verdict_format": "tagged", "prompt_version": "v",
             "items": [{"index": 0, "id": "a", "results": [_RESPONSE_RESULT]}],
             "usage": {"judgments": 1, "parsed": 1, "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
# (a change to the result, where its non-finite number sits under the result)
_NUMBER_FIELDS = [
    (lambda x: {"score": x}, "score"),
    (lambda x: {"regression_score": x}, "regression_score"),
    (lambda x: {"expected_score": x}, "expected_score"),
    (lambda x: {"confidence": x}, "confidence"),
    (lambda x: {"score_mass": x}, "score_mass"),
    (lambda x: {"score_probs": {"0": 0.5, "1": x}}, "score_probs['1']"),
    (lambda x: {"lm_verdict": {"score": x, "parse_ok": True}}, "lm_verdict.score"),
]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("change", "path"), _NUMBER_FIELDS, ids=[path for _, path in _NUMBER_FIELDS])
def test_a_non_finite_number_from_the_server_is_refused_naming_where(change, path, value):
    """Python's json reads NaN and Infinity: a response holding one is refused where it is read, naming the response
    and the field, not written into predictions.jsonl to be refused when that file is read back."""
    from judge.wire import JudgeResponse

    body = {**_RESPONSE, "items": [{"index": 0, "id": "a", "results": [{**_RESPONSE_RESULT, **change(value)}]}]}
    wanted = re.escape(f"/v1/judge response.items[0].results[0].{path}: expected a finite number, got {value!r}")
    with pytest.raises(ValueError, match=f"^{wanted}$"):
        JudgeResponse.from_json(json.loads(json.dumps(body)))  # as the server's json.dumps writes it and httpx reads it
    assert JudgeResponse.from_json({**_RESPONSE, "items": [{"index": 0, "id": "a", "results": [
        {**_RESPONSE_RESULT, **change(0.5)}]}]}).items[0].results[0]  # a finite value of the field is read


@pytest.mark.parametrize("name", ["judgments", "parsed", "prompt_tokens", "completion_tokens", "total_tokens",
                                  "results[0].usage.prompt_tokens", "results[0].usage.completion_tokens"])
def test_a_negative_count_from_the_server_is_refused_naming_where(name):
    """Token and judgment counts are never negative: a response giving one is refused naming the field; zero is read."""
    from judge.wire import JudgeResponse

    if name.startswith("results"):
        key = name.rsplit(".", 1)[1]
        changed = lambda n: {**_RESPONSE, "items": [{"index": 0, "id": "a", "results": [  # noqa: E731
            {**_RESPONSE_RESULT, "usage": {"prompt_tokens": 1, "completion_tokens": 1, key: n}}]}]}
        where = f"/v1/judge response.items[0].{name}"
    else:
        changed = lambda n: {**_RESPONSE, "usage": {**_RESPONSE["usage"], name: n}}  # noqa: E731
        where = f"/v1/judge response.usage.{name}"
    with pytest.raises(ValueError, match="^" + re.escape(f"{where}: expected a count (an integer of at least 0), "
                                                         "got -5") + "$"):
        JudgeResponse.from_json(changed(-5))
    JudgeResponse.from_json(changed(0))


def test_a_server_answer_with_a_nan_score_is_a_counted_request_failure():
    """judge-eval's judge-serve backend reads the response with JudgeResponse.from_json: its ValueError, naming the
    response's field, makes the batch's rows request_failed (retried by the next run), not a traceback."""
    import asyncio
    import types

    from eval.judging.predictions import REQUEST_FAILED
    from eval.judging.run import _judged
    from judge.plumbing.retry import RetryPolicy
    from judge.wire import JudgeResponse

    body = json.loads(json.dumps(_RESPONSE).replace('"score": 1.0', '"score": NaN'))

    class Backend:
        async def judge(self, batch):
            return [JudgeServeBackend._outcome(r) for r in JudgeResponse.from_json(body).items[0].results]

    rows, refusal = asyncio.run(_judged(Backend(), [types.SimpleNamespace(id="a")], RetryPolicy(max_retries=0)))
    assert refusal is None and [row["error"] for row in rows] == [REQUEST_FAILED]
    assert rows[0]["reason"] == ("ValueError: /v1/judge response.items[0].results[0].score: expected a finite number, "
                                 "got nan")

def test_prediction_fields_are_the_row_dataclass():
    """PREDICTION_FIELDS is derived from PredictionRow, in the order rows are written; unknown keys are refused."""
    assert PREDICTION_FIELDS == tuple(f.name for f in dataclasses.fields(PredictionRow))
    assert list(PredictionRow(id="x").to_json()) == list(PREDICTION_FIELDS)
    with pytest.raises(ValueError, match=r"row 3: unknown prediction field\(s\) \['score_distribution'\]"):
        PredictionRow.from_json({"id": "x", "score_distribution": {}}, where="row 3")
    with pytest.raises(ValueError, match="id: required"):
        PredictionRow.from_json({"judge": "j"})
    with pytest.raises(ValueError, match=r"row 4\.id: required field is missing"):
        PredictionRow.from_json({"id": None}, where="row 4")


def test_a_pairwise_verdict_off_minus_one_zero_one_fails_on_the_wire_as_judge_eval_reads_it(qwen_tokenizer):
    """judge-serve's pairwise route: a verdict of 2 is no preference (a 2 and a -2 are not one), so it crosses the
    wire as a failed judgment, out_of_scale, not counted as parsed, as judge-eval's own pairwise reader fails it;
    -1 passes. The response names the pairwise prompt's version, not the pointwise one's."""
    pair = {"instruction": "Напиши стих.", "answer_1": "Роза красная.", "answer_2": "Фиалка синяя.",
            "rubrics": "-1: лучше первый\n\n0: одинаково\n\n1: лучше второй"}
    second = {**pair, "answer_1": "Роза белая."}

    def respond(path: str, body: dict) -> tuple[int, dict]:
        # The two pairs are judged concurrently: each answer is chosen by its prompt, not by the order of arrival.
        prompt = body["prompt"] if isinstance(body["prompt"], str) else qwen_tokenizer.decode(body["prompt"])
        text = ("[FEEDBACK] Первый. [RESULT] -1 [END]" if "Роза белая." in prompt
                else "[FEEDBACK] Второй лучше вдвойне. [RESULT] 2 [END]")
        return 200, {"choices": [{"text": text, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    body, _ = judged(judge_settings(), qwen_tokenizer, {"pairs": [{**pair, "id": "a"}, {**second, "id": "b"}]}, respond)
    off, kept = (item["results"][0] for item in body["items"])
    assert (off["parse_ok"], off["score"], off["error"], off["in_scale"]) == (False, None, "out_of_scale", False)
    assert off["error_reason"] == "2 is not one of -1, 0, 1 (the pairwise scale)"
    assert (kept["parse_ok"], kept["score"]) == (True, -1.0)
    assert body["usage"]["parsed"] == 1 and body["prompt_version"] == judge.prompts.PAIRWISE_PROMPT_VERSION


@pytest.mark.parametrize(("reserve", "words"), [
    (0, "is 5000 tokens; with max_tokens 64 it needs 5064 > the model's context of 4096 tokens"),
    (8, "is 3000 tokens; with max_tokens 64 and 8 reserved it needs 3072 > the model's context of 4096 tokens"),
])  # fmt: skip
def test_judge_serves_context_words_are_read_back_by_its_clients(reserve, words):
    """One wording on both sides of the wire: what judge-serve says (serve/jobs.py) is what eval reads the prompt's
    tokens and the window from, a reserve between them included (a copied pattern missed it)."""
    prompt = 5000 if not reserve else 3000
    assert judge.wire.context_words(prompt, 64, 4096, reserve) == words
    assert judge.wire.read_context_words(f"pairs[0]: the prompt {words}.") == (prompt, 4096)
    assert judge.wire.read_context_words("This model's maximum context length is 4096 tokens") is None


def test_server_changed_shows_the_servers_format_name_with_its_control_characters_escaped():
    """The verdict format a judge-serve names is its words: an ESC sequence in it reaches the console as its escape."""
    from types import SimpleNamespace

    from eval.judging.backends import ServerChanged, refuse_format_change

    with pytest.raises(ServerChanged) as caught:
        refuse_format_change("tagged\x1b[2J", SimpleNamespace(verdict_format="integer"), "judge")
    assert "\x1b" not in str(caught.value)
    assert str(caught.value).startswith("judge-serve answered in the verdict format tagged\\x1b[2J, but this run")
    assert str(caught.value).endswith("(then set --verdict-format tagged\\x1b[2J)")


def test_a_literal_refused_names_its_values_and_the_value_sent_in_single_quotes():
    """The contract's own words for a value outside a literal (``oversize``): each allowed value and the value sent
    in the same single quotes, none of JSON's double quotes (they would come back escaped in an error body)."""
    import pydantic

    from judge.wire import JudgeRequest, error_words

    with pytest.raises(pydantic.ValidationError) as refused:
        JudgeRequest.model_validate({"items": [{"instruction": "q", "answer": "a"}], "oversize": "drop"})
    (error,) = refused.value.errors()
    assert error_words(error) == "must be one of 'refuse' or 'fail', got a string 'drop'"
