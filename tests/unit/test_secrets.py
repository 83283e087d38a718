"""No secret in any file a run writes: one redaction for every run.json, owner-only run
files, one way to give a key, long options only in full.

A planted key is searched for, byte for byte, in every file each writer leaves behind: ``judge-eval run`` against a
stand-in OpenAI server, ``judge-eval mera rutie`` against one, and ``judge-serve`` attached to a stand-in engine
(the cheapest launches that reach each writer).

The tests of this subject that start heavy components are in tests/integration/serving/test_secrets.py.
"""

from __future__ import annotations

import json
import logging
import os
import sys

import pytest

from judge.plumbing.api_keys import resolve_api_key
from judge.plumbing.config_files import ConfigError, ExactArgumentParser
from judge.plumbing.provenance import REDACTED, is_secret_name, redact, redact_argv, write_provenance
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat
from tests.support.secrets import BODY, REPO, TYPED, files_holding, permission_bits


FROM_ENV = "sk-env-0c8e2b7a9d13f5"
HF = "hf_planted_5e1d9a7c3b"


# --------------------------------------------------------------------------------------------- the redaction


@pytest.mark.parametrize(("name", "secret"), [
    ("api_key", True), ("--api-key", True), ("HF_TOKEN", True), ("WANDB_API_KEY", True), ("client_secret", True),
    ("db_password", True), ("Authorization", True), ("x-api-key", True),
    ("api_key_env", False), ("--api-key-env", False), ("pad_token_id", False), ("max_tokens", False),
    ("tokenizer", False), ("prompt_tokens", False), ("keys", False), ("run_key_file", False),
])  # fmt: skip
def test_secret_names(name, secret):
    """Whole words key/token/secret/password/auth make a secret's name; a name ending in env/file/id points at one."""
    assert is_secret_name(name) is secret


def test_redact_argv_covers_every_spelling():
    """--opt X, --opt=X, JSON values (env maps, extra bodies), shell words and NAME=value are all redacted."""
    argv = ["judge-eval", "run", "--api-key", TYPED, "--api-key-env", "MY_KEY", f"--hf-token={HF}",
            "--server-env", json.dumps({"HF_TOKEN": HF, "VLLM_CPU_KVCACHE_SPACE": "1"}),
            f"--extra-body={json.dumps({'headers': {'Authorization': f'Bearer {BODY}'}, 'top_p': 0.9})}",
            "--engine-args", f"--api-key {TYPED} --seed 0", f"HF_TOKEN={HF}", "--judge", "http://u:pw-123@host/v1"]
    assert redact_argv(argv) == [
        "judge-eval", "run", "--api-key", REDACTED, "--api-key-env", "MY_KEY", f"--hf-token={REDACTED}",
        "--server-env", json.dumps({"HF_TOKEN": REDACTED, "VLLM_CPU_KVCACHE_SPACE": "1"}),
        f"--extra-body={json.dumps({'headers': {'Authorization': REDACTED}, 'top_p': 0.9})}",
        "--engine-args", "--api-key '***' --seed 0", f"HF_TOKEN={REDACTED}", "--judge", f"http://u:{REDACTED}@host/v1",
    ]  # fmt: skip


def test_redact_keeps_what_is_not_secret():
    """Counts, token limits, variable names and plain lists survive; secrets at any depth do not."""
    record = {"max_tokens": 32, "pad_token_id": 0, "api_key": TYPED, "api_key_env": "OPENAI_API_KEY", "k": [1, 5],
              "server_env": {"HF_TOKEN": HF, "OMP_NUM_THREADS": "2"}, "stops": ["\ndef", "```"],
              "extra_body": {"nested": [{"password": BODY}]}, "empty_key": ""}
    assert redact(record) == {**record, "api_key": REDACTED, "server_env": {"HF_TOKEN": REDACTED, "OMP_NUM_THREADS": "2"},
                              "extra_body": {"nested": [{"password": REDACTED}]}}  # fmt: skip


def test_a_registered_key_is_scrubbed_wherever_it_appears(tmp_path, monkeypatch):
    """A key read from the environment is scrubbed from every string of run.json, whatever it is stored under."""
    monkeypatch.setenv("PLANTED_KEY_VAR", FROM_ENV)
    assert resolve_api_key("", "PLANTED_KEY_VAR", command="test") == FROM_ENV
    write_provenance(tmp_path / "run", "test", {"note": f"called with {FROM_ENV} inside"}, odd={"x": [FROM_ENV, 1]})
    assert files_holding(tmp_path / "run", [FROM_ENV]) == {}


def test_a_registered_key_holding_another_is_scrubbed_whole_whatever_order_they_were_kept_in(monkeypatch):
    """Two registered keys, one inside the other (a judge-serve key and a longer key that begins with it): replaced
    shorter first, the longer one's remainder stayed in the text. The set's order was the hash seed's; here it is
    forced to the worst one."""
    from judge.plumbing import provenance

    class ShortestFirst(set):
        def __iter__(self):
            return iter(sorted(set.__iter__(self), key=len))

    monkeypatch.setattr(provenance, "_KNOWN_SECRETS", ShortestFirst())
    provenance.register_secret("sk-local-1234")
    provenance.register_secret("sk-local-1234-and-more")
    assert provenance.scrub_secrets("a sk-local-1234-and-more b sk-local-1234 c") == "a *** b *** c"


def test_run_json_and_its_folder_are_owner_only(tmp_path):
    """run.json is 0600 from its first byte (also when rewritten) and a folder the toolkit creates is 0700."""
    out = tmp_path / "new" / "run"
    write_provenance(out, "test", {})
    assert (permission_bits(out / "run.json"), permission_bits(out), permission_bits(out.parent)) == (0o600, 0o700, 0o700)
    os.chmod(out / "run.json", 0o644)
    write_provenance(out, "test", {})
    assert permission_bits(out / "run.json") == 0o600


# -------------------------------------------------------------------------------------------- one way to a key


def test_key_from_the_environment_by_default_and_a_typed_key_warned_about(monkeypatch, caplog):
    """$OPENAI_API_KEY by default (unset: no key); another named variable must be set; a typed key is warned about."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert resolve_api_key("", "OPENAI_API_KEY", command="judge-eval run") == ""
    monkeypatch.setenv("OPENAI_API_KEY", FROM_ENV)
    assert resolve_api_key("", "OPENAI_API_KEY", command="judge-eval run") == FROM_ENV
    with pytest.raises(ConfigError, match="api_key_env: the environment variable NOT_SET_ANYWHERE is not set"):
        resolve_api_key("", "NOT_SET_ANYWHERE", command="judge-eval run")
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.api_keys"):
        assert resolve_api_key(TYPED, "OPENAI_API_KEY", command="judge-eval run") == TYPED
    assert "visible to other users" in caplog.text and TYPED not in caplog.text


def test_long_options_are_never_abbreviated():
    """`judge-eval run --api-key X` is the key (not --api-key-env X), and an abbreviation is an error everywhere."""
    from eval.cli import build_parser as eval_parser
    from eval.mera.cli import build_parser as mera_parser
    from serve.cli import build_parser as serve_parser

    args = eval_parser().parse_args(["run", "--api-key", TYPED])
    assert (args.api_key, getattr(args, "api_key_env", None)) == (TYPED, None)
    for parser, argv in ((eval_parser(), ["run", "--api-key-e", "X"]), (mera_parser(), ["rutie", "--api-key-e", "X"]),
                         (serve_parser(), ["--api-key-e", "X"]), (eval_parser(), ["run", "--conc", "2"])):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)


def test_every_parser_in_the_tree_takes_options_in_full():
    """No console script or bench builds a plain argparse.ArgumentParser (judge.plumbing.config_files.ExactArgumentParser)."""
    from tests.unit.test_citations import tracked_files  # the repository's own files, not a venv's (.venv-docs too)

    offenders = []
    for path in tracked_files():
        if path.suffix != ".py" or path.parts[len(REPO.parts)] == "tests":
            continue
        if "argparse.ArgumentParser(" in path.read_text(encoding="utf-8"):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []
    assert ExactArgumentParser().allow_abbrev is False
    assert ExactArgumentParser().add_subparsers().add_parser("x").allow_abbrev is False


# ------------------------------------------------------------------------- a planted key in every file a run writes


def test_judge_eval_run_writes_no_key(tmp_path, monkeypatch):
    """judge-eval run with a typed key, a key in $OPENAI_API_KEY, an HF token in server_env and a secret in
    extra_body: no file of the run folder holds any of them; run.json is 0600 and the folder 0700."""
    from eval.cli import main

    import judge

    data = tmp_path / "data.jsonl"
    judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], data)
    out = tmp_path / "run"
    monkeypatch.setenv("OPENAI_API_KEY", FROM_ENV)
    with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]")
                          ) as server:
        argv = ["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
                "--api-key", TYPED, "--server-env", json.dumps({"HF_TOKEN": HF}),
                "--extra-body", json.dumps({"client_secret": BODY})]
        monkeypatch.setattr(sys, "argv", ["judge-eval", *argv])  # run.json records the process's own argv
        assert main(argv) == 0
    # The secrets did reach the judge, each where it belongs (the typed key over $OPENAI_API_KEY): so their absence
    # from the files below is the run keeping them out, not a run that dropped them.
    chats = server.bodies("/v1/chat/completions")
    assert len(chats) == 3 and all(body["client_secret"] == BODY for body in chats)
    assert server.headers and {h.get("authorization") for h in server.headers} == {f"Bearer {TYPED}"}
    run_json = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run_json["config"]["api_key"] == REDACTED and run_json["config"]["server_env"] == {"HF_TOKEN": REDACTED}
    assert files_holding(out, [TYPED, FROM_ENV, HF, BODY]) == {}
    assert (permission_bits(out / "run.json"), permission_bits(out)) == (0o600, 0o700)


def test_judge_eval_mera_writes_no_key(tmp_path, monkeypatch):
    """judge-eval mera rutie with a typed --api-key: no file of its run folder holds it; run.json is 0600."""
    from eval.mera import cli

    out = tmp_path / "mera"
    with ScriptedEndpoint(vllm_chat("1")) as server:
        argv = ["rutie", "--endpoint", server.base_url, "--model", "scripted", "--data", "sample", "--mode", "chat",
                "--out", str(out), "--max-retries", "0", "--api-key", TYPED]
        monkeypatch.setattr(sys, "argv", ["judge-eval", "mera", *argv])
        assert cli.main(argv) == 0
    assert (out / "metrics.json").is_file()
    assert files_holding(out, [TYPED]) == {}
    assert (permission_bits(out / "run.json"), permission_bits(out)) == (0o600, 0o700)


@pytest.mark.parametrize(("url", "recorded"), [
    ("https://user:s3cret@host/v1?api_key=abc", "https://user:***@host/v1?api_key=***"),
    ("https://host/v1?model=m&key=abc&max_tokens=5#part", "https://host/v1?model=m&key=***&max_tokens=5#part"),
    ("https://host/v1?access_token=abc", "https://host/v1?access_token=***"),
    ("https://host/v1?api_key_env=OPENAI_API_KEY&tokenizer=t", "https://host/v1?api_key_env=OPENAI_API_KEY&tokenizer=t"),
])  # fmt: skip
def test_a_urls_secret_query_parameters_are_redacted(url, recorded):
    """A key sent in a URL's query is a secret by its parameter's name, by the rule for an option's name; the rest
    of the URL is kept, in a config field, an argv and running text alike."""
    assert redact({"judge": url}) == {"judge": recorded}
    assert redact_argv(["run", "--judge", url]) == ["run", "--judge", recorded]
    assert redact({"note": f"asked {url} twice"}) == {"note": f"asked {recorded} twice"}


def test_a_query_secret_in_prose_keeps_the_prose_and_a_nested_urls_secret_is_redacted():
    """A URL written in a sentence ends before its closing punctuation, which stays; a URL inside another's parameter
    (a redirect's ``next=``) has its own secret parameters redacted; a parameter that only names a variable stays."""
    from judge.plumbing.provenance import scrub_secrets

    assert scrub_secrets("see https://h/v1?key=abcd), then") == "see https://h/v1?key=***), then"
    assert scrub_secrets("https://h/v1?next=https://o/cb?token=abcd&y=2") == "https://h/v1?next=https://o/cb?token=***&y=2"
    assert scrub_secrets("https://h/v1?model=x.") == "https://h/v1?model=x."
    assert scrub_secrets("https://h/v1?api_key_env=OPENAI") == "https://h/v1?api_key_env=OPENAI"
