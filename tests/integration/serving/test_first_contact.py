"""A new user's first contact with a server, through the console scripts: every failure is one plain sentence with a
documented exit code, no traceback; the client fits its request to what the server allows; one rule for keys.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_first_contact.py.
"""

from __future__ import annotations

import json

import httpx

from judge.plumbing.api_keys import KEY_RULE
from judge.plumbing.retry import EXIT_UNUSABLE
from judge.wire import root_identity
from tests.support.first_contact import (NO_KEY, env_without_keys, console_error_line, wait_outcome,
                                         sample_records_file, run_argv, start_judge_eval)


# ---------------------------------------------------------------------------------------------- real judge-serve


def test_judge_serve_advertises_its_cap_and_run_fits_to_it(seq2seq_server, tmp_path):
    """judge-serve's /v1/models entries carry its caps beside the engine's max_model_len; `judge-eval run` reads
    them and asks for at most judge_max_tokens (48 on the tests' servers) with a printed note instead of meeting a
    400 per item; the same run with a wrong key stops at the first contact naming the key's variable."""
    entry = httpx.get(seq2seq_server.base_url + "/models", timeout=30,
                      headers={"Authorization": f"Bearer {seq2seq_server.api_key}"}).json()["data"][0]
    assert (entry["judge_max_tokens"], entry["max_proxy_tokens"], entry["max_model_len"]) == (48, 8192, 2048)
    data = sample_records_file(tmp_path / "data.jsonl", 1)
    fitted = start_judge_eval(run_argv(seq2seq_server.base_url, tmp_path / "fitted", data),
                    env_without_keys(JUDGE_SERVE_API_KEY=seq2seq_server.api_key))
    refused = start_judge_eval(run_argv(seq2seq_server.base_url, tmp_path / "refused", data, "--api-key-env", "MY_KEY"),
                     env_without_keys(JUDGE_SERVE_API_KEY=seq2seq_server.api_key, MY_KEY="wrong"))
    (code, out, err), (refused_code, _, refused_err) = wait_outcome(fitted), wait_outcome(refused)
    assert code == 0, err[-2000:]
    assert ("note: the judge's max_tokens 1024 is above this server's limit of 48 (judge_max_tokens in GET "
            "/v1/models): asking for 48 (set --max-tokens to choose)") in err
    assert json.loads(out)["request_failed"] == 0 and json.loads(out)["written"] == 1
    run_json = json.loads((tmp_path / "fitted" / "run.json").read_text(encoding="utf-8"))
    assert run_json["config"]["max_tokens"] == 48
    limits = dict(run_json["server_limits"])
    # The checkpoint judge-serve's engine serves, as judge-serve names it: a digest of its path, no path
    # (judge.wire.root_identity; the checkpoint, not a derived view the engine may load)
    assert limits.pop("root") == root_identity(seq2seq_server.run_record()["layout"]["root"])
    assert limits == {"max_model_len": 2048, "judge_max_tokens": 48, "max_proxy_tokens": 8192,
                      "trained_max_completion_length": None, "prompt_version": "pollux-ru-v2",
                      "verdict_format": "tagged", "max_tokens_requested": 1024, "max_tokens_adopted": None}
    assert refused_code == EXIT_UNUSABLE
    assert console_error_line(refused_err) == (f"judge-eval run: error: the judge at {seq2seq_server.base_url} refused the key "
                                        f"from $MY_KEY (HTTP 401: {NO_KEY}); {KEY_RULE}")
