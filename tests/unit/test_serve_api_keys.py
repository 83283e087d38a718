"""judge-serve's API keys: a key that is no bearer token, or a reward key that cannot travel in one path segment, is
refused at start; every route reads the key from the same header bytes."""

from __future__ import annotations

import pytest

from judge.plumbing.config_files import ConfigError
from serve.config import ServeConfig
from tests.support.served_app import served as _served


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


@pytest.mark.parametrize(("reward_key", "status"), [("s3cret-reward-key", 401), (None, 400)])
def test_a_reward_key_closes_the_plain_get_reward_when_judge_serve_has_no_key(reward_key, status, monkeypatch):
    """With $JUDGE_SERVE_REWARD_KEY set and no api_key, POST /get_reward without the key in the path is refused (401,
    naming the keyed route, never the key); with neither key it stays open (a body with no queries: its 400)."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from serve.errors import error_response
    from serve.rewards import install_reward_routes
    from serve.supervision import ServerState

    if reward_key is None:
        monkeypatch.delenv("JUDGE_SERVE_REWARD_KEY", raising=False)
    else:
        monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", reward_key)
    app = FastAPI()
    app.state.serve = ServerState(config=ServeConfig(model="x"), layout=None)  # the body is read under its bound
    install_reward_routes(app, ServeConfig(model="x"), error_response)
    with TestClient(app) as http:
        answer = http.post("/get_reward", json={})
    assert answer.status_code == status
    if reward_key is not None:
        message = answer.json()["error"]["message"]
        assert message == ("missing or wrong reward key: send POST /get_reward/<reward key> with the key in "
                           "$JUDGE_SERVE_REWARD_KEY")
        assert reward_key not in answer.text


def test_only_health_ready_and_the_reward_routes_are_open_without_the_key():
    """The routes open without the key were matched as path prefixes: /healthz, /readyX, /get_rewardX (and any later
    /health/... or /ready/... route) passed the key check. Now /health and /ready exactly, /get_reward and what is
    under /get_reward/ (the reward key's path; its route checks the key itself)."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from serve.connections import ApiKeyMiddleware

    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def anything(path: str) -> dict:
        return {"path": path}

    http = TestClient(ApiKeyMiddleware(app, "k"))
    open_paths = ["/health", "/ready", "/get_reward", "/get_reward/some-reward-key"]
    keyed_paths = ["/healthz", "/health/engines", "/readyX", "/ready/detail", "/get_rewardX", "/get_reward_x/y",
                   "/v1/models"]
    assert {p: http.post(p).status_code for p in open_paths} == dict.fromkeys(open_paths, 200)
    assert {p: http.post(p).status_code for p in keyed_paths} == dict.fromkeys(keyed_paths, 401)
    assert http.post("/healthz", headers={"Authorization": "Bearer k"}).status_code == 200


def test_bearer_matches_reads_the_first_authorization_header_as_sent():
    """The one check every route uses (serve.connections.bearer_matches): the first Authorization header's raw bytes
    against ``Bearer <key>``, the scheme in any case (RFC 9110 section 11.1); a second header, another case of the key
    or the key's Latin-1 reading do not pass."""
    from serve.connections import bearer_matches

    assert bearer_matches([(b"authorization", b"Bearer k")], "k")
    assert bearer_matches([(b"x-other", b"Bearer x"), (b"authorization", b"Bearer k"),
                           (b"authorization", b"Bearer x")], "k")
    assert not bearer_matches([(b"authorization", b"Bearer x"), (b"authorization", b"Bearer k")], "k")
    for given in (b"bearer k", b"BEARER  k"):
        assert bearer_matches([(b"authorization", given)], "k")
    for given in (b"Bearer K", b"Bearerk", b"Basic k", b"Bearer"):
        assert not bearer_matches([(b"authorization", given)], "k")
    assert not bearer_matches([], "k")
    assert bearer_matches([(b"authorization", "Bearer ключ".encode())], "ключ")
    assert not bearer_matches([(b"authorization", "Bearer ключ".encode("cp1251"))], "ключ")
