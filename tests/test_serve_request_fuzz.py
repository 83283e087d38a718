"""/v1/judge validation as a property, in process: bodies generated from the schema (tests/bad_requests.py), each
broken in one place, are refused with a 400 naming the broken field, and nothing else escapes validation.

The same bodies go to a live judge-serve in tests/test_serve_load.py (with the checks only a running server makes:
its model name, limits and context).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from serve.schema import RequestError, decode_json_body, parse_judge_request, resolve_criteria
from tests.bad_requests import BREAKERS, BadBody, bad_bodies, deterministic_settings, valid_bodies

# Each way of breaking a body gets its own examples (one strategy over all ways lets Hypothesis dwell on a few).
FUZZ = deterministic_settings(max_examples=60)


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
