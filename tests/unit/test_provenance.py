"""judge.plumbing.provenance: one run.json schema for every job, null for unknowns, history kept across launches."""

from __future__ import annotations

import json
import re

import pytest

from judge.plumbing import provenance
from judge.plumbing.provenance import PROVENANCE_FILE, SCHEMA_KEYS, read_provenance, update_provenance, write_provenance


def test_record_has_every_schema_key_in_order(tmp_path):
    """A fresh run.json holds exactly the schema keys (in order), then the job's own sections."""
    path = write_provenance(tmp_path / "run", "judge-eval run", {"out": "x"}, prompt_version="pollux-ru-v2",
                            launch={"world_size": 2}, backend="chat")
    assert path == tmp_path / "run" / PROVENANCE_FILE
    record = json.loads(path.read_text(encoding="utf-8"))
    assert list(record) == [*SCHEMA_KEYS, "backend"]
    assert (record["job"], record["config"], record["prompt_version"], record["backend"]) == (
        "judge-eval run", {"out": "x"}, "pollux-ru-v2", "chat")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", record["python"])
    assert record["launch"]["world_size"] == 2 and record["launch"]["argv"] and record["launch"]["pid"] > 0
    assert set(record["packages"]) == set(provenance.PACKAGES) and record["earlier_launches"] == []


def test_unknowns_are_null_never_a_word(tmp_path, monkeypatch):
    """Outside a git checkout and for a package that is not installed the values are null, not "unknown". argv is
    this test's own: the record carries the command line, and pytest's may name a test file with "unknown" in it."""
    monkeypatch.setattr("sys.argv", ["judge-serve", "--config", "serve.yaml"])
    monkeypatch.setattr(provenance, "PACKAGES", ("pollux-judge", "surely-not-installed-dist"))
    assert provenance.package_versions(provenance.PACKAGES)["surely-not-installed-dist"] is None
    assert provenance.git_state(tmp_path) == (None, None)
    real_git_state = provenance.git_state
    monkeypatch.setattr(provenance, "git_state", lambda where=None: real_git_state(tmp_path))
    record = provenance.provenance("judge-serve", {})
    assert record["git_revision"] is None and record["git_dirty"] is None
    assert "unknown" not in json.dumps(record)


def test_this_checkout_is_recorded():
    """Run from the repository, the commit is a 40-hex sha and dirtiness a bool."""
    commit, dirty = provenance.git_state()
    assert re.fullmatch(r"[0-9a-f]{40}", commit or "") and isinstance(dirty, bool)


def test_a_package_installed_inside_another_checkout_records_no_revision(tmp_path):
    """pollux-judge installed into a venv inside a user's own repository (its .venv ignored): git answers from the
    installed copy with that repository's HEAD, which is no revision of the code that ran. Only a checkout that
    tracks the package's files counts; one that does is still read, its dirtiness with it."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / ".gitignore").write_text(".venv/\n")
    (tmp_path / "judge" / "plumbing").mkdir(parents=True)
    (tmp_path / "judge" / "plumbing" / "provenance.py").write_text("# tracked\n")
    git("add", ".")
    git("commit", "-qm", "init")
    installed = tmp_path / ".venv" / "lib" / "site-packages" / "judge" / "plumbing"
    installed.mkdir(parents=True)
    (installed / "provenance.py").write_text("# installed\n")
    assert provenance.git_state(installed) == (None, None)
    (tmp_path / "judge" / "plumbing" / "provenance.py").write_text("# changed\n")
    assert provenance.git_state(tmp_path / "judge" / "plumbing") == (git("rev-parse", "HEAD"), True)


def test_a_second_launch_keeps_the_first_in_earlier_launches(tmp_path):
    """Resuming into the same folder: the earlier launch moves to earlier_launches; sections are replaced."""
    write_provenance(tmp_path, "judge-train run", {"seed": 1}, launch={"resume_from": None}, data={"n": 1})
    update_provenance(tmp_path, result={"global_step": 3})
    write_provenance(tmp_path, "judge-train run", {"seed": 1}, launch={"resume_from": "checkpoint-3"})
    write_provenance(tmp_path, "judge-train run", {"seed": 1}, launch={"resume_from": "checkpoint-5"})
    record = read_provenance(tmp_path)
    assert [e["resume_from"] for e in record["earlier_launches"]] == [None, "checkpoint-3"]
    assert record["launch"]["resume_from"] == "checkpoint-5" and "result" not in record and "data" not in record


def test_update_merges_sections_and_needs_a_record(tmp_path):
    """update_provenance adds top-level sections to an existing run.json and refuses a folder without one."""
    with pytest.raises(ValueError, match="run.json: not found"):
        update_provenance(tmp_path, result={})
    write_provenance(tmp_path, "judge-serve", {"port": 1})
    update_provenance(tmp_path, engines={"generator": {"url": "http://x"}})
    assert read_provenance(tmp_path / PROVENANCE_FILE)["engines"] == {"generator": {"url": "http://x"}}
    assert read_provenance(tmp_path / "elsewhere", missing_ok=True) == {}


def test_a_section_may_not_overwrite_the_schema(tmp_path):
    """Job sections named like schema keys are refused (a job cannot redefine git_revision or packages)."""
    with pytest.raises(ValueError, match="git_revision"):
        write_provenance(tmp_path, "judge-eval run", {}, git_revision="abc")


def test_argv_secrets_lists_what_redact_argv_hides_inside_json_values_and_groups_of_shell_words():
    """A secret inside a JSON value or a quoted group of options is hidden by ``redact_argv``; ``argv_secrets`` names
    it as given, so that a program's own log of its arguments can be scrubbed too. Longest first; the option names,
    the other words and what is no secret are never listed."""
    from judge.plumbing.provenance import argv_secrets

    argv = ["vllm", "serve", "/m", "--hf-token", "hf_SECRETabc", "--api-key=SEKRET123",
            "--model-loader-extra-config", '{"api_key": "KEYVAL77", "x": 1}',
            "--hf-overrides", '{"token": "TOKVAL42", "rope": {"factor": 2}}',
            "--engine-args", "--api-key SEKRET999 --seed 0", "--server-env", '{"env": ["HF_TOKEN=hf_ENVTOKEN"]}',
            "--max-tokens", "512"]
    assert argv_secrets(argv) == ["hf_SECRETabc", "hf_ENVTOKEN", "SEKRET123", "SEKRET999", "KEYVAL77", "TOKVAL42"]
    assert argv_secrets(["vllm", "serve", "/m", "--seed", "0", "--hf-overrides", '{"rope": {"factor": 2}}']) == []


def test_a_group_of_shell_words_opening_with_a_secret_option_hides_only_its_value():
    """``--engine-args "--hf-token=AAA --seed 0"``: the group is read word by word. Taken as one ``--name=value`` it
    hid "AAA --seed 0" whole, a text no log holds, so ``argv_secrets`` gave that and a log tail kept AAA."""
    from judge.plumbing.provenance import argv_secrets, redact_argv

    argv = ["--engine-args", "--hf-token=AAA --seed 0", "--hf-overrides={\"token\": \"T T\"}"]
    assert redact_argv(argv) == ["--engine-args", "'--hf-token=***' --seed 0", '--hf-overrides={"token": "***"}']
    assert argv_secrets(argv) == ["AAA", "T T"]


@pytest.mark.parametrize("arg", ["--authorization=Bearer sk-abc123", "--auth-header=Authorization: Bearer sk-XYZ123",
                                 "--secret=correct horse battery staple", "--password=it's my pass",
                                 "--api-key=sk-abc123\r", "--api-key='my key'", "--password=foo - bar baz",
                                 "--password=correct -horse battery", "--password=a -- b"])
def test_a_secret_value_with_whitespace_that_is_no_group_of_options_is_hidden_whole(arg):
    """Only shell words whose second is an option are a group (the test above); "Bearer sk-…", a passphrase, a key
    read with its CRLF are one secret each: hidden whole, and listed whole for a log tail's scrubbing. Read as shell
    words, the first word alone was hidden ("'--authorization=***' sk-abc123") and "Bearer" was scrubbed from logs."""
    from judge.plumbing.provenance import argv_secrets, redact_argv

    name, _, value = arg.partition("=")
    assert redact_argv([arg]) == [f"{name}=***"]
    assert argv_secrets([arg]) == [value]


@pytest.mark.parametrize(("environ", "recorded"), [
    ({"SLURM_JOB_ID": "12"}, "0"),  # a Slurm job's first start: Slurm sets no SLURM_RESTART_COUNT yet
    ({"SLURM_JOB_ID": "12", "SLURM_RESTART_COUNT": "2"}, "2"),
    ({}, None),  # no Slurm job
])  # fmt: skip
def test_a_slurm_jobs_first_launch_records_restart_count_0(monkeypatch, environ, recorded):
    """The first launch of a Slurm job recorded slurm_restart_count null, as if it ran outside Slurm."""
    for name in ("SLURM_JOB_ID", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert provenance.provenance("judge-train run", {})["launch"]["slurm_restart_count"] == recorded
