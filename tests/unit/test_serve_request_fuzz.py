"""/v1/judge validation as a property, in process: bodies generated from the schema (tests/support/bad_requests.py), each
broken in one place, are refused with a 400 naming the broken field, and nothing else escapes validation.

The same bodies go to a live judge-serve in tests/integration/serving/test_serve_load.py (with the checks only a running server makes:
its model name, limits and context).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from serve.schema import RequestError, decode_json_body, parse_judge_request, resolve_criteria
from tests.support.bad_requests import BREAKERS, BadBody, bad_bodies, deterministic_settings, valid_bodies

# Each way of breaking a body gets its own examples (one strategy over all ways lets Hypothesis dwell on a few).
FUZZ = deterministic_settings(max_examples=60)


def _peak_bytes(work) -> int:
    """The most memory Python allocated while ``work()`` ran (``tracemalloc``)."""
    import tracemalloc

    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def validate(raw: bytes) -> None:
    """What judge-serve does with a body before it needs the model: decode, parse, resolve the criteria."""
    request = parse_judge_request(decode_json_body(raw))
    for i, item in enumerate(request.items):
        resolve_criteria(item, i)


def names(error: RequestError, case: BadBody) -> bool:
    """Whether ``error`` names ``case.param`` (or, where ``case.exact`` is False, a field inside it)."""
    param = error.param or ""
    inside = not case.exact and (param.startswith(case.param + ".") or param.startswith(case.param + "["))
    return (param == case.param or inside) and error.message.startswith(param)


@FUZZ
@given(valid_bodies())
def test_valid_bodies_pass_validation(body):
    """The bodies the bad ones are made from are valid (else a 'bad' body could be bad twice over)."""
    validate(json.dumps(body).encode())


@pytest.mark.parametrize("way", list(BREAKERS))
@FUZZ
@given(data=st.data())
def test_a_body_broken_in_one_place_is_a_400_naming_that_place(way, data):
    """Every body broken in one place raises RequestError (never another exception) with status 400 and the broken
    field as ``param``, its message starting with it; bodies only a live server refuses may pass validation."""
    case = data.draw(bad_bodies(way), label="case")
    try:
        validate(case.raw)
    except RequestError as err:
        assert err.status == 400, (err.status, err.message[:300])
        if not case.live_only:
            assert names(err, case), (err.param, err.message[:300])
        return
    assert case.live_only, "validation accepted a broken body"


# -------------------------------------------------------------------------------------------------- rubric numbers

from judge.scales import MAX_LEVEL_DIGITS, MAX_LEVELS  # noqa: E402

_RUBRIC_PARAM = "items[0].criteria[0].rubrics"


def _custom(rubrics) -> bytes:
    item = {"instruction": "Ответь", "answer": "Да", "criteria": [{"name": "Своя шкала", "rubrics": rubrics}]}
    return json.dumps({"items": [item]}, ensure_ascii=False).encode()


def _number(digits: int, draw) -> str:
    return str(draw(st.integers(1, 9))) + "".join(str(draw(st.integers(0, 9))) for _ in range(digits - 1))


@st.composite
def oversized_rubrics(draw):
    """A custom rubric whose numbers are over the caps: a range of more than MAX_LEVELS levels (in words, up to
    10**12 and beyond), a level written with more digits than MAX_LEVEL_DIGITS (up to 5,000, past Python's int()
    limit), or more than MAX_LEVELS distinct level lines or mapping keys."""
    shape = draw(st.sampled_from(["range", "range digits", "line digits", "key digits", "many lines", "many keys"]))
    if shape == "range":
        high = draw(st.one_of(st.integers(MAX_LEVELS, 10**7), st.integers(10**7, 10**12)))
        return draw(st.sampled_from([f"Оценка от 0 до {high}", f"from 0 to {high}", f"0–{high} баллов"]))
    if shape == "range digits":
        return f"от 0 до {_number(draw(st.integers(MAX_LEVEL_DIGITS + 1, 5000)), draw)}"
    if shape == "line digits":
        return f"0: плохо\n{_number(draw(st.integers(MAX_LEVEL_DIGITS + 1, 5000)), draw)}: хорошо"
    if shape == "key digits":
        return {"0": "плохо", _number(draw(st.integers(MAX_LEVEL_DIGITS + 1, 5000)), draw): "хорошо"}
    count = draw(st.integers(MAX_LEVELS + 1, 3 * MAX_LEVELS))
    if shape == "many lines":
        return "\n".join(f"{level}: уровень" for level in range(count))
    return {str(level): "уровень" for level in range(count)}


@FUZZ
@given(oversized_rubrics())
def test_rubric_numbers_over_the_caps_are_a_400_naming_the_rubric(rubrics):
    """A custom rubric with too many levels or too many digits is a 400 naming ``items[0].criteria[0].rubrics``:
    never a scale of millions of levels echoed in every result, never a 500 (ValueError, MemoryError,
    OverflowError), even for 457 bytes of "от 0 до 10000000"."""
    with pytest.raises(RequestError) as err:
        validate(_custom(rubrics))
    assert (err.value.status, err.value.param) == (400, _RUBRIC_PARAM)
    assert err.value.message.startswith(_RUBRIC_PARAM)


@FUZZ
@given(st.integers(-(10**5), 10**5), st.integers(2, MAX_LEVELS))
def test_rubric_numbers_within_the_caps_are_read_whole(low, size):
    """A range of 2 to MAX_LEVELS levels written with up to MAX_LEVEL_DIGITS digits is read level for level (one
    level is no scale: test_scales.py::test_judge_serve_refuses_a_one_level_custom_rubric_naming_the_field)."""
    high = low + size - 1
    request = parse_judge_request(decode_json_body(_custom(f"Оценка от {low} до {high}")))
    (criterion,) = resolve_criteria(request.items[0], 0)
    assert criterion.scale.levels == tuple(range(low, high + 1))


def test_checking_a_body_takes_memory_in_proportion_to_the_body():
    """The value check before validation keeps each value's place as a link to its parent's, written out only for
    the value refused. A 40,000-character key over a list of 20,000 numbers (a 100 KB body) once cost a path string
    per number, the key copied into each: 800 MB; now a few MB. A value refused deep inside still names its place."""

    from serve.schema import check_values

    body = decode_json_body(json.dumps({"items": [{}], "k" * 40_000: [0] * 20_000}).encode())
    peak = _peak_bytes(lambda: check_values(body))
    assert peak < 20_000_000, peak
    with pytest.raises(RequestError) as err:
        check_values({"items": [{"criteria": [{"name": "a", "rubrics": {"x.y": ["ok", "\ud800"]}}]}]})
    assert err.value.param == 'items[0].criteria[0].rubrics."x.y"[1]'


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/v1/chat/completions", {"max_tokens": "100000"}, "max_tokens"),  # vLLM would read the string as 100000
    ("/v1/completions", {"max_tokens": 100000.0}, "max_tokens"),
    ("/v1/chat/completions", {"max_tokens": 10, "n": "64"}, "n"),
    ("/v1/responses", {"max_output_tokens": "9999"}, "max_output_tokens"),
    ("/v1/completions", {"prompt": ["x"] * 1000, "max_tokens": 10}, "max_tokens"),  # 10 x 1,000 prompts > 1,000
    # Completions read max_tokens only: a small max_completion_tokens beside it bounds nothing.
    ("/v1/completions", {"prompt": "x", "max_completion_tokens": 1, "max_tokens": 400, "n": 8}, "max_tokens"),
    # Chat prefers max_completion_tokens, but every field set is bounded whichever the engine obeys.
    ("/v1/chat/completions", {"max_completion_tokens": 1, "max_tokens": 400, "n": 8}, "max_tokens"),
])  # fmt: skip
def test_the_proxied_token_bound_counts_what_the_engine_would_generate(path, body, param):
    """max_proxy_tokens bounds the tokens a proxied request can buy: its fields must be JSON integers (vLLM's request
    classes coerce strings and floats, which the bound once let through uncounted), and a batch of prompts buys
    max_tokens x n for each prompt. One tokenized prompt (a list of ids) is one prompt; a completions batch without
    max_tokens is counted at the completions default (16 each) and sent as it came."""
    from serve.app import proxied_token_bound

    _, refused = proxied_token_bound(body, path, 1000)
    assert refused is not None and refused.status_code == 400
    assert json.loads(refused.body)["error"]["param"] == param
    assert proxied_token_bound({"prompt": [1, 2, 3], "max_tokens": 10}, "/v1/completions", 1000) == (
        {"prompt": [1, 2, 3], "max_tokens": 10}, None)
    assert proxied_token_bound({"prompt": ["a", "b", "c"]}, "/v1/completions", 1000) == ({"prompt": ["a", "b", "c"]},
                                                                                        None)
    # On completions a max_completion_tokens alone leaves max_tokens unset, which vLLM reads as its default of 16:
    # counted so (16 x 4 = 64 within 1,000), the body unchanged; 16 x 70 = 1,120 is refused naming max_tokens.
    body = {"prompt": "x", "max_completion_tokens": 5, "n": 4}
    assert proxied_token_bound(body, "/v1/completions", 1000) == (body, None)
    _, refused = proxied_token_bound({"prompt": "x", "max_completion_tokens": 5, "n": 70}, "/v1/completions", 1000)
    assert json.loads(refused.body)["error"]["param"] == "max_tokens"


def test_an_unknown_field_of_any_length_is_named_in_a_bounded_message():
    """An unknown field's name is the client's: a 4,000-character one is named by its first characters and length,
    in the message and the param alike, not echoed whole."""
    from serve.schema import MESSAGE_MAX_CHARS

    with pytest.raises(RequestError) as err:
        parse_judge_request({"items": [{"instruction": "a", "answer": "b", "criteria": ["Креативность"],
                                        "x" * 4000: 1}]})
    assert err.value.param.startswith("items[0].xxx") and len(err.value.param) < MESSAGE_MAX_CHARS + 40
    assert len(err.value.message) < MESSAGE_MAX_CHARS + 40 and "characters]" in err.value.message


# ------------------------------------------------------------------------------------------ bounded before pydantic


class _Counted:
    """Counts what validation builds to choose its error: pydantic's errors (``ValidationError.error_count``) and
    the ``param_of`` walks that rank them."""

    def __init__(self, monkeypatch):
        import serve.schema

        self.errors, self.walks = [], 0
        first_error, param_of = serve.schema._first_error, serve.schema.param_of

        def counted_first_error(err, data):
            self.errors.append(err.error_count())
            return first_error(err, data)

        def counted_param_of(*args, **kwargs):
            self.walks += 1
            return param_of(*args, **kwargs)

        monkeypatch.setattr(serve.schema, "_first_error", counted_first_error)
        monkeypatch.setattr(serve.schema, "param_of", counted_param_of)


def _zeros_body(n: int) -> bytes:
    return b'{"items":[{"instruction":"x","answer":"y","criteria":[' + b",".join([b"0"] * n) + b"]}]}"


def test_a_400_kb_body_of_bad_criteria_builds_a_few_errors_not_one_per_entry(monkeypatch):
    """200,000 criteria of ``0`` (a 400 KB body) once built 400,001 pydantic errors and ranked each with a path
    walk: 4 s on the event loop (an 8 MiB one: 103 s and 15 GB). The wire types bound every list
    (``judge.wire.MAX_LIST_ENTRIES``) and stop at a list's first bad entry, so the 400 names the first bad criterion
    after a handful of errors; with the server's bounds (as judge-serve calls it) nothing is validated at all."""
    counted = _Counted(monkeypatch)
    body = decode_json_body(_zeros_body(200_000))
    with pytest.raises(RequestError) as unbounded:
        parse_judge_request(body)
    assert counted.errors == [] and counted.walks == 0  # refused by its length, before pydantic
    assert (unbounded.value.status, unbounded.value.param) == (400, "items[0].criteria")
    with pytest.raises(RequestError) as bounded:
        parse_judge_request(body, max_items=64, max_judgments=512)
    assert bounded.value.param == "items" and bounded.value.message.startswith("items: 200000 (item, criterion) judgments")
    assert counted.errors == [] and counted.walks == 0
    # Within the list bound, pydantic meets the bad entries: it stops at the first.
    from judge.wire import MAX_LIST_ENTRIES

    with pytest.raises(RequestError) as within:
        parse_judge_request(decode_json_body(_zeros_body(MAX_LIST_ENTRIES)))
    assert within.value.param == "items[0].criteria[0]"
    assert counted.errors == [3] and counted.walks <= 4  # the entry's two union branches and "auto"; then the choice


@pytest.mark.parametrize(("body", "param"), [
    ({"items": [{"instruction": "x", "answer": "y", **{f"k{i}": 0 for i in range(200_000)}}]}, "items[0]"),
    ({"items": [{"instruction": "x", "answer": "y", "criteria": [
        {"name": "c", "rubrics": {str(i): 0 for i in range(200_000)}}]}]}, "items[0].criteria[0].rubrics"),
    ({"items": [{"instruction": [0] * 200_000, "answer": "y", "criteria": ["Креативность"]}]}, "items[0].instruction"),
], ids=["unknown fields", "rubric levels", "a list for a string"])  # fmt: skip
def test_objects_and_lists_past_any_the_schema_admits_are_refused_before_pydantic(monkeypatch, body, param):
    """Each unknown field, and each value of a mapping that fails, is one pydantic error: 200,000 of them cost as the
    200,000 criteria did. No object of the schema has more keys than a rubric has levels (``judge.scales.MAX_LEVELS``)
    and no list more entries than ``MAX_LIST_ENTRIES``: past that, the 400 names the object or list, and pydantic
    builds nothing."""
    counted = _Counted(monkeypatch)
    with pytest.raises(RequestError) as err:
        parse_judge_request(body)
    assert counted.errors == [] and counted.walks == 0
    assert (err.value.status, err.value.param) == (400, param) and err.value.message.startswith(param)


def test_the_value_check_passes_over_a_long_list_of_plain_values_whole():
    """A proxied body may hold a long list of token ids: the value check reads the list's kinds at once instead of
    stacking a place for each number (an 8 MiB array of zeros held the event loop 6.5 s; a million numbers stacked
    ~150 MB of places), and still names a bad string among many good ones, or a long number inside a list of lists."""

    from serve.schema import check_values

    body = {"prompt": [0] * 1_000_000, "n": ["a", "b"]}
    peak = _peak_bytes(lambda: check_values(body))
    assert peak < 5_000_000, peak
    with pytest.raises(RequestError) as surrogate:
        check_values({"prompt": ["ok"] * 1000 + ["\ud800"]})
    assert surrogate.value.param == "prompt[1000]"
    with pytest.raises(RequestError) as long_number:
        check_values(decode_json_body(b'{"prompt": [[1, 2], [3, ' + b"9" * 200 + b"]]}"))
    assert long_number.value.param == "prompt[1][1]"


def test_a_server_may_take_more_than_the_default_bounds_up_to_the_wire_ceiling():
    """A server set to take 1,000 items and 2,000 judgments takes a request of 600 items (the default 64 and 512 are
    settings, not the contract's bound); a setting above the contract's list ceiling is refused when the server's
    config is checked, naming it, instead of admitting requests the types then refuse."""
    from judge.wire import MAX_LIST_ENTRIES
    from serve.config import ConfigError, ServeConfig

    items = [{"instruction": "x", "answer": "y", "criteria": ["Креативность"]}] * 600
    request = parse_judge_request({"items": items}, max_items=1000, max_judgments=2000)
    assert len(request.items) == 600
    ServeConfig(model="m", max_batch_items=MAX_LIST_ENTRIES, max_judgments_per_request=MAX_LIST_ENTRIES).validate()
    for name in ("max_batch_items", "max_judgments_per_request"):
        with pytest.raises(ConfigError, match=f"^{name}: at most {MAX_LIST_ENTRIES}"):
            ServeConfig(model="m", **{name: MAX_LIST_ENTRIES + 1}).validate()
