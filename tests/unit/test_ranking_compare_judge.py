"""`judge-eval compare` of two rank runs compares the judge settings that make their verdicts (each folder's run.json,
``eval.ranking.compare.JUDGE_SETTINGS``), not only the served model's name: runs judged with another prompt,
sampling or budget are refused, naming each difference, unless ``--allow-other-judge``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from tests.support.eval_ranking import (FULLNESS, LITERACY, SAFE, Candidate, instructions_dataset, rank_argv,
                                        tagged_verdict)
from tests.support.fixtures_models import copy_of
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from tests.support.two_formula_export import retrain, two_formula_export


class AnyPromptJudge(ScriptedEndpoint):
    """A chat judge that scores by the criterion named in the prompt, whatever the prompt's language."""

    SCORES = {SAFE: 0, LITERACY: 2, FULLNESS: 3}

    def __init__(self):
        super().__init__(self._respond, model="pollux-judge-7b")

    def _respond(self, path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = body["messages"][-1]["content"]
        return 200, chat_completion(tagged_verdict(next(s for c, s in self.SCORES.items() if c in prompt)),
                                    body["model"])


def _rank(tmp_path: Path, data: Path, name: str, judge_yaml: str = "") -> Path:
    extra = []
    if judge_yaml:
        path = tmp_path / f"{name}.yaml"
        path.write_text(judge_yaml + "\n", encoding="utf-8")
        extra = ["--judge-config", str(path)]
    with Candidate() as cand, AnyPromptJudge() as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / name, "--n-boot", "0", *extra)) == 0
    return tmp_path / name


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> dict:
    """Two rank runs of the same data under the same default judge settings, made once for the module: what is
    tested here is compare's reading of their run.json, which each test edits in its own copies (``copy_of``)."""
    root = tmp_path_factory.mktemp("ranked")
    data = instructions_dataset(root)
    return {"data": data, "a": _rank(root, data, "a"), "b": _rank(root, data, "b")}


@pytest.mark.parametrize("yaml, said", [
    ("prompt: en", "prompt 'ru' vs 'en'; prompt_version "),
    ("temperature: 0.3", "temperature 0.0 vs 0.3"),
    ("max_tokens: 512", "max_tokens 1024 vs 512"),
])  # fmt: skip
def test_compare_refuses_runs_judged_with_other_settings(tmp_path: Path, ranked: dict, capsys, yaml: str,
                                                         said: str) -> None:
    """One served judge, one name: B judged with the English prompt (or another temperature or budget) is refused
    with exit 2, naming the setting and both values; --allow-other-judge compares them and says what differs."""
    a, b = copy_of(ranked["a"], tmp_path / "a"), _rank(tmp_path, ranked["data"], "b", yaml)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "the runs were judged differently (" in err and said in err and "--allow-other-judge" in err
    assert main(["compare", str(a), str(b), "--n-boot", "0", "--allow-other-judge", "--out", str(tmp_path / "c")]) == 0
    result = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))
    name = yaml.split(":")[0]
    assert name in result["judge_differences"]
    assert "Judged differently (compared with --allow-other-judge): " in (tmp_path / "c" / "compare.md").read_text()


def test_compare_tells_checkpoints_apart_and_needs_run_json(tmp_path: Path, ranked: dict, capsys) -> None:
    """Two checkpoint judges served under one name differ in run.json's judge (their folders); a run folder
    without run.json cannot be checked, so it is refused unless --allow-other-judge."""
    a, b = (copy_of(ranked[n], tmp_path / n) for n in ("a", "b"))
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0  # the same settings: compared
    for folder, checkpoint in ((a, "/ckpt/judge-step-100"), (b, "/ckpt/judge-step-200")):
        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        record["config"]["judge"] = checkpoint
        (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    assert "judge '/ckpt/judge-step-100' vs '/ckpt/judge-step-200'" in capsys.readouterr().err
    (b / "run.json").unlink()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    assert f"{b}: no run.json with the judge's settings" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--n-boot", "0", "--allow-other-judge"]) == 0


def _record(folder: Path, judge: str | None = None, **recorded: str | None) -> None:
    """Set what ``folder``'s run.json says of its judge: ``judge`` (config.judge), and ``root`` (server_limits.root)
    or ``weights_fingerprint`` as a server records them (None: the server said nothing)."""
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    if judge is not None:
        run["config"]["judge"] = judge
    for name, value in recorded.items():
        (run.setdefault("server_limits", {}) if name == "root" else run)[name] = value
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")


def test_compare_refuses_one_checkpoint_retrained_in_place(tmp_path: Path, ranked: dict, capsys) -> None:
    """One checkpoint folder retrained in place between two ranks: same path, same served name, other weights, which
    only judge-serve's weights_fingerprint tells. Both runs name the judge /ckpt/judge and recorded other
    fingerprints: refused, naming both; a run whose server said nothing (None) is no evidence of a difference, so
    the pair is compared, and so is the same fingerprint."""
    a, b = (copy_of(ranked[n], tmp_path / n) for n in ("a", "b"))
    _record(a, "/ckpt/judge", weights_fingerprint="sha256:0a1b")
    _record(b, "/ckpt/judge", weights_fingerprint="sha256:9f8e")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "the runs were judged differently (weights_fingerprint 'sha256:0a1b' vs 'sha256:9f8e')" in err
    _record(b, weights_fingerprint=None)
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0
    _record(b, weights_fingerprint="sha256:0a1b")
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0



def test_compare_takes_one_exports_fingerprints_by_either_formula_as_its_weights(tmp_path: Path, ranked: dict,
                                                                                 capsys) -> None:
    """One judge-train export ranked by a judge-serve that fingerprinted its files by name, size and modification
    time, then by one reading its ``weights_sha256.json``: other fingerprints of the same files, each the export's
    own by one formula, which was refused as "retrained in place". Compared now; the export retrained since (the
    first fingerprint no longer its own) is refused as before."""
    export = tmp_path / "runs" / "judge" / "export"
    old, new = two_formula_export(export)
    a, b = (copy_of(ranked[n], tmp_path / n) for n in ("a", "b"))
    _record(a, str(export), weights_fingerprint=old)
    _record(b, str(export), weights_fingerprint=new)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0, capsys.readouterr().err
    _record(b, weights_fingerprint=retrain(export))
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    assert "the runs were judged differently (weights_fingerprint " in capsys.readouterr().err

HUB = "models--ai-forever--pollux-judge-7b/snapshots/4e1f0c2"
#: judge-serve's root for an engine that loaded each path (``judge.wire.root_identity``): "sha256:" and the first 16
#: hex digits of ``printf %s <path> | sha256sum``.
ROOT_DIGEST = {"/ckpt/judge": "sha256:aee3f9b4ee96b64c", "/ckpt/other": "sha256:f533c9c2315990e6"}


@pytest.mark.parametrize("judge, roots, prints, notes", [
    # One hub id served from two machines' HF caches (a Slurm job's HF_HOME and a workstation's): one revision, so
    # one root; the files' modification times differ, so the fingerprints do: a note, not a refusal.
    ("ai-forever/pollux-judge-7b", [f"/home/u/.cache/huggingface/hub/{HUB}",
                                    f"/home/u/.cache/pollux-judge/huggingface/hub/{HUB}/"],
     ["b37a9a275d372229", "49eff8692d1e1937"], {"weights_fingerprint": ["b37a9a275d372229", "49eff8692d1e1937"]}),
    # ... as today's judge-serve records them (judge.wire.root_identity: a hub snapshot's own part, no local
    # folder), and one run of each kind: one revision, a note. (A digest of the whole path refused these.)
    ("ai-forever/pollux-judge-7b", [HUB, HUB], ["b37a9a275d372229", "49eff8692d1e1937"],
     {"weights_fingerprint": ["b37a9a275d372229", "49eff8692d1e1937"]}),
    ("ai-forever/pollux-judge-7b", [f"/home/u/.cache/huggingface/hub/{HUB}", HUB], ["aa", "bb"],
     {"weights_fingerprint": ["aa", "bb"]}),
    # One hub id at two revisions, vLLM (no fingerprint): the roots differ by revision: a note.
    ("ai-forever/pollux-judge-7b", [f"/c/hub/{HUB}", "/c/hub/models--ai-forever--pollux-judge-7b/snapshots/9d2"],
     [None, None], {"root": [f"/c/hub/{HUB}", "/c/hub/models--ai-forever--pollux-judge-7b/snapshots/9d2"]}),
    # Two URL judges serving copies of one checkpoint at other paths: nothing names one folder, both are notes.
    (None, ["/node1/judge", "/node2/judge"], ["aa", "bb"],
     {"root": ["/node1/judge", "/node2/judge"], "weights_fingerprint": ["aa", "bb"]}),
    # An older judge-serve recorded the path /ckpt/judge, today's the digest of /ckpt/judge
    # (printf %s /ckpt/judge | sha256sum): one folder, one fingerprint, nothing to note.
    (None, ["/ckpt/judge", ROOT_DIGEST["/ckpt/judge"]], ["aa", "aa"], {}),
    # ... and of another folder, /ckpt/other: a note, as two other paths are.
    (None, ["/ckpt/judge", ROOT_DIGEST["/ckpt/other"]], ["aa", "bb"],
     {"root": ["/ckpt/judge", ROOT_DIGEST["/ckpt/other"]], "weights_fingerprint": ["aa", "bb"]}),
])  # fmt: skip
def test_compare_notes_weights_that_name_a_place_not_the_weights(tmp_path: Path, ranked: dict, capsys, judge, roots,
                                                                 prints, notes) -> None:
    """A server's root is a path, and the fingerprint hashes modification times: across machines the same weights
    differ in both. Unless both runs name one judge checkpoint whose fingerprint changed, the runs are compared
    (exit 0) and compare.json's judge_notes, compare.md and the console say what differs."""
    a, b = (copy_of(ranked[n], tmp_path / n) for n in ("a", "b"))
    for folder, root, fingerprint in zip((a, b), roots, prints):
        _record(folder, judge, root=root, weights_fingerprint=fingerprint)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0", "--out", str(tmp_path / "c")]) == 0
    console = capsys.readouterr().out
    result = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))
    assert result["judge_differences"] == {} and result["judge_notes"] == notes
    markdown = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    assert markdown.count("Note: ") == console.count("Note: ") == len(notes)
    for name in notes:
        assert f"Note: {name} " in markdown and f"Note: {name} " in console


@pytest.mark.parametrize("roots", [
    ["/ckpt/judge", "/ckpt/judge"],  # servers that named the path (an older judge-serve)
    [ROOT_DIGEST["/ckpt/judge"], ROOT_DIGEST["/ckpt/judge"]],  # judge-serve's digest of it, both times
    ["/ckpt/judge", ROOT_DIGEST["/ckpt/judge"]],  # one of each: one folder all the same
])  # fmt: skip
def test_compare_refuses_a_url_judge_whose_server_loaded_one_folder_retrained(tmp_path: Path, ranked: dict,
                                                                               capsys, roots) -> None:
    """Two URL judges (run.json's judge: a URL, compared as '<url>') whose servers loaded the same folder
    /ckpt/judge with other fingerprints: the folder retrained in place, refused, whether a run recorded the path or
    judge-serve's digest of it. Before: a path and its digest read as two folders, the difference only a note."""
    a, b = (copy_of(ranked[n], tmp_path / n) for n in ("a", "b"))
    _record(a, root=roots[0], weights_fingerprint="aa")
    _record(b, root=roots[1], weights_fingerprint="bb")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    assert "the runs were judged differently (weights_fingerprint 'aa' vs 'bb')" in capsys.readouterr().err
