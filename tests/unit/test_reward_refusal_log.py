"""A refused /get_reward request leaves its cause in judge-serve's log, never the reward key (fast tier)."""

from __future__ import annotations

import logging

from tests.unit.test_reward_route import PROMPT, _attached_judge_serve, _reward_body, judge_serve_log


def test_a_refused_reward_request_is_logged_with_its_cause_and_without_the_key(tiny_causal_dir, monkeypatch):
    """OpenRLHF never reads a refusal's body (it retries, then fails the step): the warning names the status, the
    field and the message. A wrong key's 401 names the route with the key written <reward-key>, and a refusal on the
    keyed route holds the key nowhere either."""
    key = "reward-key-that-must-stay-secret"
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", key)
    with judge_serve_log(monkeypatch) as records, _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, _):
        wrong = http.post(f"/get_reward/{key}-not", json=_reward_body("Весна.", ["Креативность"]))
        for _ in range(4):  # logged once a minute at most: a keyless client cannot flood the log
            assert http.post(f"/get_reward/{key}-not", json={}).status_code == 401
        bad = http.post(f"/get_reward/{key}", json=_reward_body("Весна.", ["Нет такого критерия"]))
        other = http.post(f"/get_reward/{key}", json={"query": ["Другой запрос, не этот."], "prompts": [PROMPT],
                                                      "labels": [{"instruction": "В", "criteria": ["Креативность"]}]})
    assert (wrong.status_code, bad.status_code, other.status_code) == (401, 400, 400)
    assert wrong.headers["connection"] == "close"  # its body unread: no connection held by a keyless client
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert warnings == [
        "a reward request was refused (401) on POST /get_reward/<reward-key>: missing or wrong reward key (1 since the "
        "start; at most one such line per 60 s)",
        "a reward request was refused (400, param labels[0].criteria[0]): labels[0].criteria[0]: unknown criterion "
        "'Нет такого критерия'",
        "a reward request was refused (400, param query[0]): query[0]: does not start with prompts[0]; the answer is "
        "the query after its prompt",
    ]
    assert [m for m in (r.getMessage() for r in records) if key in m] == []


def test_a_refusals_log_line_is_clipped(monkeypatch):
    """A message echoing a client's long field is clipped in the log as in the answer (serve.schema.clip_message)."""
    from serve.config import ServeConfig
    from serve.rewards import RewardRoute
    from serve.schema import MESSAGE_MAX_CHARS, RequestError

    with judge_serve_log(monkeypatch) as records:
        route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
        route._refused(RequestError("labels[0]: " + "я" * 10 * MESSAGE_MAX_CHARS, param="items[0]"), [0])
    [line] = [r.getMessage() for r in records]
    assert line.startswith("a reward request was refused (400, param labels[0]): labels[0]: яя")
    assert len(line) < 2 * MESSAGE_MAX_CHARS


def test_a_refusals_log_line_shows_control_characters_as_escapes(monkeypatch):
    """The warning goes to the operator's console: an ESC sequence or a newline in a refusal's message or param is
    shown as its escape (``judge.plumbing.console_logging.visible``), not repainting the terminal or forging a line
    of its own. The route's messages quote a client's words with repr already; the log line does not rely on it."""
    from serve.config import ServeConfig
    from serve.rewards import RewardRoute
    from serve.schema import RequestError

    with judge_serve_log(monkeypatch) as records:
        route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
        route._refused(RequestError("items[0]: unknown criterion Кр\x1b[2J\nforged: judge-serve ready",
                                    param="items[0].criteria\x1b[31m"), [0])
    assert [r.getMessage() for r in records] == [
        "a reward request was refused (400, param labels[0].criteria\\x1b[31m): labels[0]: unknown criterion "
        "Кр\\x1b[2J\\nforged: judge-serve ready"]


def test_a_wrong_keys_path_is_logged_with_its_control_characters_escaped(tiny_causal_dir, monkeypatch):
    """A client without the key chooses the path its 401 line names (decoded: %1b is an ESC, %c2%85 a NEL), shown as
    a console shows it, so the client cannot repaint the operator's terminal or forge a line of its own. The key's
    mask runs on the escaped text: a space ends it, and the part after the space is shown escaped; a NEL or an ESC,
    escaped first, is masked with the key, whatever follows it."""
    import functools

    import serve.rewards
    from serve.quiet_logs import SpacedWarning

    # Every refusal logged, not one a minute: both paths' lines are seen.
    monkeypatch.setattr(serve.rewards, "SpacedWarning", functools.partial(SpacedWarning, interval_s=0.0))
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", "reward-key-that-must-stay-secret")
    with judge_serve_log(monkeypatch) as records, _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, _):
        assert http.post("/get_reward/x%20%1b[2J%c2%85forged", json={}).status_code == 401
        assert http.post("/get_reward/x%c2%85forged%1b[2J", json={}).status_code == 401
    spaced, unspaced = [r.getMessage() for r in records
                        if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert spaced.startswith("a reward request was refused (401) on POST /get_reward/<reward-key> "
                             "\\x1b[2J\\x85forged: missing or wrong reward key"), spaced
    assert unspaced.startswith("a reward request was refused (401) on POST /get_reward/<reward-key>: "
                               "missing or wrong reward key"), unspaced
    for line in (spaced, unspaced):
        assert "\x1b" not in line and "\x85" not in line
