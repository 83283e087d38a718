"""judge-serve's review findings: a tagged score the length limit cut inside its digits, rubric mappings naming one
level twice, API keys compared one way on every route and refused when no bearer token, a scale with more levels
than vLLM returns log-probabilities for, and an engine that no longer serves judge-serve's own model name."""

from __future__ import annotations

import contextlib
import json
import logging
from collections import OrderedDict
from types import SimpleNamespace

import pytest

from judge import Scale
from judge.plumbing.config_files import ConfigError
from judge.scales import ScaleError, scale_of
from serve.config import ServeConfig
from serve.score_reading import seq2seq_verdict

# ----------------------------------------------------------------------------------- a tagged score cut by max_tokens


def _read(text: str, scale: Scale, finish_reason: str, lenient: bool = True) -> tuple:
    verdict = seq2seq_verdict(text, None, scale, lenient, finish_reason=finish_reason)
    return verdict["score"], verdict["parse_ok"], verdict["error"]


def test_a_tagged_score_the_length_limit_may_have_cut_fails_as_cut():
    """max_tokens stopped the output between the "1" and the "0" of a 0..10 scale's "10": lenient reading took the
    "1" as the score. It fails as ``cut`` now, as an integer-format verdict cut anywhere does; the same "1" is the
    score when the judge stopped by itself, when no level of the scale is longer ("1" of 0..2, "5" of 0..10), and
    when a complete [RESULT] ... [END] came before the cut."""
    ten = Scale.range(0, 10)
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "length") == (None, False, "cut")
    assert _read("[FEEDBACK] good [RESULT] **1", ten, "length") == (None, False, "cut")
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "stop") == (1.0, True, None)
    assert _read("[FEEDBACK] good [RESULT] 1", Scale.range(0, 2), "length") == (1.0, True, None)
    assert _read("[FEEDBACK] good [RESULT] 5", ten, "length") == (5.0, True, None)
    assert _read("[FEEDBACK] good [RESULT] 1**", ten, "length") == (1.0, True, None)  # the number closed
    assert _read("[FEEDBACK] good [RESULT] 1 [END] and 1", ten, "length") == (1.0, True, None)
    pairwise = Scale((-10, -1, 0, 1))
    assert _read("[FEEDBACK] good [RESULT] -1", pairwise, "length") == (None, False, "cut")
    # without lenient a missing [END] fails as it did
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "length", lenient=False) == (None, False, "missing_end")
    reason = seq2seq_verdict("[FEEDBACK] good [RESULT] 1", None, ten, True, finish_reason="length")["error_reason"]
    assert "'1' may be the start of the level 10" in reason


@pytest.mark.parametrize("tail", ["[", "[E", "[EN", "[END", " [ en", "\n[EN"])
def test_a_score_before_a_cut_end_tag_is_read_leniently(tail):
    """Lenient reading exists for an output cut before its [END]; one cut inside that tag ("[RESULT] 1 [EN") was a
    ``no_score`` failure. The score before a partial [END] was written whole: read, and no ``cut`` (the digits do
    not run to the cut), whatever stopped the output; strict reading still fails it."""
    ten = Scale.range(0, 10)
    text = "[FEEDBACK] good [RESULT] 1 " + tail
    assert _read(text, ten, "length") == (1.0, True, None)
    assert _read(text, ten, "stop") == (1.0, True, None)
    assert _read(text, ten, "length", lenient=False)[:2] == (None, False)


# ----------------------------------------------------------------------------- rubric mappings naming a level twice


@pytest.mark.parametrize("rubrics", [{"0": "b", "00": "c", "1": "d"}, {"+1": "b", "1": "c", "0": "d"},
                                     {" 0": "b", "0": "c", "1": "d"}, {"\u22121": "b", "-1": "c", "0": "d"}])
def test_a_rubric_mapping_with_two_keys_for_one_level_is_refused(rubrics):
    """{"0": ..., "00": ...} was the scale 0..1 with two descriptions of level 0 shown to the judge; a rubric text
    repeating a level is refused, and so is such a mapping now, naming both keys; through a custom criterion the
    error names the field (``items[i].criteria[j].rubrics``)."""
    from judge.criteria import CriterionError, resolve_criterion
    from judge.wire import CustomCriterion

    with pytest.raises(ScaleError, match=r"^rubric levels '.+' and '.+' are both level -?[01]: give each level one key$"):
        scale_of(rubrics)
    with pytest.raises(CriterionError) as err:
        resolve_criterion(CustomCriterion(name="c", rubrics=rubrics))
    assert err.value.param("items[0].criteria[1]") == "items[0].criteria[1].rubrics"
    with pytest.raises(ScaleError, match="are both level"):
        scale_of({"ru": rubrics, "en": {"0": "a", "1": "b"}})


@pytest.mark.parametrize("key", ["\u0660", "\u0661", "\uff11"])
def test_a_rubric_level_is_written_in_ascii_digits(key):
    """int() reads the Arabic-Indic "\u0660" (and fullwidth digits) as 0 (1): such a key made the level 0 the judge
    was shown as "\u0660". Only ASCII digits are a level."""
    with pytest.raises(ScaleError, match="is not an integer"):
        scale_of({key: "a", "2": "b"})
    assert scale_of({"0": "a", "1": "b", "2": "c"}) == Scale((0, 1, 2))
    assert scale_of({"\u22121": "a", "0": "b", "+1": "c"}) == Scale((-1, 0, 1))


# ------------------------------------------------------------------------------------------------ the API keys


@pytest.mark.parametrize("key", ["ключ", "caf\u00e9", "my key", "tab\there", "new\nline", "\x7f"])
def test_an_api_key_that_is_no_bearer_token_is_refused_at_start(key, monkeypatch):
    """A bearer token is visible ASCII (RFC 6750, Section 2.1): a non-ASCII key was compared as raw header bytes by
    one route and as their Latin-1 -> UTF-8 round trip by others, so one client was let in by some and not others.
    judge-serve now refuses such a key, and such a reward key, at start, naming which without showing it."""
    monkeypatch.delenv("JUDGE_SERVE_REWARD_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"^api_key: character \d+ of the key is ") as err:
        ServeConfig(model="x", api_key=key).validate()
    assert key not in str(err.value)
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", key)
    with pytest.raises(ConfigError, match=r"^the reward key \(\$JUDGE_SERVE_REWARD_KEY\): character \d+ of the key"):
        ServeConfig(model="x").validate()


def test_a_reward_key_must_fit_one_path_segment(monkeypatch):
    """The reward key travels as /get_reward/<key>: a "/" there never reaches the route, a "%", "?" or "#" changes
    what arrives. Refused at start; a token_urlsafe-like key and an api_key with "/" (a header carries it) pass."""
    for key in ("a/b", "a%2Fb", "a?b", "a#b"):
        monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", key)
        with pytest.raises(ConfigError, match="a URL path segment cannot carry"):
            ServeConfig(model="x").validate()
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", "Abc-_.~0123456789")
    ServeConfig(model="x", api_key="a+b/c=").validate()


@contextlib.contextmanager
def _served(model_dir, monkeypatch, api_key: str, completions=None):
    """judge-serve's app in process (its start ended) before a scripted attached engine serving ``attached``
    (``completions(path, body)`` answers each POST); the configuration is not validated, so that a key validation
    refuses can still be served."""
    from fastapi.testclient import TestClient

    from serve.app import create_app
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from tests.support.serve_in_process import attached_engine_get, await_bring_up

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    monkeypatch.delenv("JUDGE_SERVE_REWARD_KEY", raising=False)
    answer = completions or (lambda path, body: (200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]",
                                                                     "finish_reason": "stop"}]}))
    with ScriptedEndpoint(answer, respond_get=attached_engine_get) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="judge", generator_url=engine.url,
                             max_model_len=1024, max_tokens=128, api_key=api_key)
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            yield http, engine


def _let_in(http, headers) -> dict[str, bool]:
    """Whether each way judge-serve checks its key let the caller in: the middleware (GET /v1/models), the health
    and readiness details (/ready names the model only to a keyed caller) and /get_reward's own check."""
    return {
        "middleware": http.get("/v1/models", headers=headers).status_code != 401,
        "ready": "model" in http.get("/ready", headers=headers).json(),
        "get_reward": http.post("/get_reward", headers=headers, json={}).status_code != 401,
    }


def test_every_route_reads_the_key_from_the_same_header_bytes(tiny_causal_dir, monkeypatch):
    """The middleware compared the raw header bytes (the last Authorization header), /health, /ready and
    /get_reward those bytes decoded as Latin-1 and encoded as UTF-8 (the first header): a non-ASCII key sent as
    UTF-8 passed the one and failed the others, and two Authorization headers were read differently. Every check
    now reads the first header's raw bytes; validation refuses such keys, but a key served anyway is one key."""
    everywhere, nowhere = dict.fromkeys(("middleware", "ready", "get_reward"), True), \
        dict.fromkeys(("middleware", "ready", "get_reward"), False)  # fmt: skip
    with _served(tiny_causal_dir, monkeypatch, api_key="ключ") as (http, _):
        assert _let_in(http, [("authorization", "Bearer ключ".encode())]) == everywhere
        assert _let_in(http, [("authorization", "Bearer ключ".encode("cp1251"))]) == nowhere
    with _served(tiny_causal_dir, monkeypatch, api_key="k") as (http, _):
        assert _let_in(http, [("authorization", "Bearer k")]) == everywhere
        assert _let_in(http, [("authorization", "Bearer k"), ("authorization", "Bearer x")]) == everywhere
        assert _let_in(http, [("authorization", "Bearer x"), ("authorization", "Bearer k")]) == nowhere


# ---------------------------------------------------------------------------- more levels than vLLM's max_logprobs


class _DigitTokenizer:
    """Every level written as one token (ids from 100)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [100 + int(text)]


def _payload(levels: int) -> dict:
    from judge.checkpoints import JudgeKind
    from serve.judging import Judge, JudgeSettings

    judge = object.__new__(Judge)  # completion_payload needs no engines, threads or pools
    judge.settings = JudgeSettings(model_name="m", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "m"},
                                   max_model_len=2048, max_tokens=64, temperature=0.0, score_logprobs=True,
                                   lenient=False, constrained=False, feedback_max_chars=0, max_judgments=64)
    judge.tokenizer, judge._level_ids = _DigitTokenizer(), OrderedDict()
    job = SimpleNamespace(criterion=SimpleNamespace(scale=Scale.range(0, levels - 1)), prompt_ids=[1, 2, 3])
    return judge.completion_payload(job, SimpleNamespace(max_tokens=64, temperature=0.0, constrained=False))


def test_a_scale_of_more_levels_than_vllm_returns_logprobs_for_asks_none(caplog):
    """vLLM refuses a request whose ``logprobs`` exceeds its ``--max-logprobs`` (20 by default), verdict and all: a
    0..20 rubric of single-token levels failed every judgment. Such a request now asks for no log-probabilities
    (no expected_score or confidence), and the log says so once; 20 levels still ask for all 20."""
    import serve.score_reading as score_reading

    score_reading._warned_sizes.discard(21)
    assert _payload(20)["logprobs"] == 20 and _payload(20)["logprob_token_ids"] == list(range(100, 120))
    with caplog.at_level(logging.WARNING, logger="judge_serve"):
        for _ in range(3):
            payload = _payload(21)
            assert "logprobs" not in payload and "logprob_token_ids" not in payload
    said = [r.getMessage() for r in caplog.records if "single-token levels" in r.getMessage()]
    assert said == ["a scale of 21 single-token levels: no expected_score or confidence for it (the engine returns at "
                    "most 20 log-probabilities per token, vLLM's max_logprobs, and refuses a request asking more)"]


def test_max_logprobs_is_read_from_the_engine_flags():
    """``--max-logprobs`` as argparse reads it (the last one given, ``=`` or apart), -1 meaning no cap."""
    from serve.score_reading import VLLM_MAX_LOGPROBS, logprobs_fit, max_logprobs_of

    assert VLLM_MAX_LOGPROBS == 20 and max_logprobs_of([]) == 20 and max_logprobs_of(["--seed", "0"]) == 20
    assert max_logprobs_of(["--max-logprobs", "40"]) == 40 and max_logprobs_of(["--max-logprobs=-1"]) == -1
    assert max_logprobs_of(["--max-logprobs", "5", "--max-logprobs=30"]) == 30
    assert max_logprobs_of(["--max-logprobs", "many"]) == 20
    levels = dict.fromkeys(range(30), 1)
    assert logprobs_fit(levels, 30) and logprobs_fit(levels, -1) and not logprobs_fit(levels, 29)


# ------------------------------------------------------------------ an engine that no longer serves judge-serve's name


VLLM_404 = json.dumps({"error": {"message": "The model `judge` does not exist.", "type": "NotFoundError",
                                 "param": "model", "code": 404}}).encode()


def test_an_engine_404_for_judge_serves_own_name_is_a_503_to_retry():
    """An attached engine restarted under another name answers 404 to judge-serve's own name: relayed, the client
    read "model `judge` does not exist; this server serves `judge`". The client's request is right: a 503 with
    Retry-After, saying the engine no longer serves the expected name. A name judge-serve does not serve is still
    the 404 naming those it does."""
    from serve.errors import engine_error

    answer = engine_error(404, VLLM_404, "generator", names=("attached", "judge"), asked_model="judge")
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    error = json.loads(answer.body)["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "engine_unavailable")
    assert error["message"] == ("the generator engine no longer serves the model name judge-serve expects (`judge`): "
                                "it was restarted under another name; retry later")
    given = engine_error(404, VLLM_404, "generator", names=("judge",), asked_model="judge",
                         retry_headers={"Retry-After": "12"})
    assert given.status_code == 503 and given.headers["retry-after"] == "12"
    other = engine_error(404, VLLM_404, "generator", names=("attached", "judge"), asked_model="gpt-4")
    assert other.status_code == 404 and json.loads(other.body)["error"]["code"] == "model_not_found"


def test_a_judgment_an_engine_answers_404_is_a_503_to_retry():
    """/v1/judge and /get_reward send the engine the name it served at start: its 404 was relayed as "engine answered
    404" (a 404 the client cannot fix). Now a 503 with the server's Retry-After, naming the expected name."""
    from serve.engine_client import EngineFailure
    from serve.errors import judgment_failed
    from serve.supervision import ServerState

    state = ServerState(config=None, layout=None, status="ready",
                        engines={"generator": SimpleNamespace(url="http://127.0.0.1:9")})
    state.judge = SimpleNamespace(settings=SimpleNamespace(engine_models={"generator": "attached"}))
    answer = judgment_failed(EngineFailure("engine answered 404: The model `attached` does not exist.", 404,
                                           param="model"), state)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    error = json.loads(answer.body)["error"]
    assert error["code"] == "engine_unavailable" and error["message"].startswith(
        "an engine no longer serves the model name judge-serve expects (`attached`)")
    refused = judgment_failed(EngineFailure("engine answered 400: too long", 400), state)
    assert refused.status_code == 400  # the engine's other refusals stay the client's to fix
    # a 404 that is not vLLM's for the model (an attached pooler without /classify, a path behind a proxy) is no
    # renamed engine: not a 503 every client would retry forever
    no_route = judgment_failed(EngineFailure("engine answered 404: Not Found", 404), state)
    assert no_route.status_code == 404 and "retry-after" not in no_route.headers


def test_an_attached_engine_renamed_under_judge_serve_answers_503(tiny_causal_dir, monkeypatch):
    """In process, a scripted engine that answers every completion with vLLM's 404 for an unknown model: the proxied
    /v1/completions naming judge-serve's name and /v1/judge both answer 503 with Retry-After."""
    with _served(tiny_causal_dir, monkeypatch, api_key="k", completions=lambda path, body: (404, json.loads(VLLM_404))
                 ) as (http, _):
        auth = {"Authorization": "Bearer k"}
        proxied = http.post("/v1/completions", headers=auth, json={"model": "judge", "prompt": "hi", "max_tokens": 4})
        judged = http.post("/v1/judge", headers=auth, json={"items": [
            {"instruction": "Напиши стих.", "answer": "Весна.", "criteria": ["Креативность"]}]})
    for answer in (proxied, judged):
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] and answer.json()["error"]["code"] == "engine_unavailable"
        assert "no longer serves the model name judge-serve expects" in answer.json()["error"]["message"]
