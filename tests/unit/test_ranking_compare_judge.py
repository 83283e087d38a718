"""`judge-eval compare` of two rank runs compares the judge settings that make their verdicts (each folder's run.json,
``eval.ranking.compare.JUDGE_SETTINGS``), not only the served model's name: runs judged with another prompt,
sampling or budget are refused, naming each difference, unless ``--allow-other-judge``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from tests.support.eval_ranking import FULLNESS, LITERACY, SAFE, Candidate, rank_argv, tagged_verdict
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


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


@pytest.mark.parametrize("yaml, said", [
    ("prompt: en", "prompt 'ru' vs 'en'; prompt_version "),
    ("temperature: 0.3", "temperature 0.0 vs 0.3"),
    ("max_tokens: 512", "max_tokens 1024 vs 512"),
])  # fmt: skip
def test_compare_refuses_runs_judged_with_other_settings(tmp_path: Path, data: Path, capsys, yaml: str,
                                                         said: str) -> None:
    """One served judge, one name: B judged with the English prompt (or another temperature or budget) is refused
    with exit 2, naming the setting and both values; --allow-other-judge compares them and says what differs."""
    a, b = _rank(tmp_path, data, "a"), _rank(tmp_path, data, "b", yaml)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "the runs were judged differently (" in err and said in err and "--allow-other-judge" in err
    assert main(["compare", str(a), str(b), "--n-boot", "0", "--allow-other-judge", "--out", str(tmp_path / "c")]) == 0
    result = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))
    name = yaml.split(":")[0]
    assert name in result["judge_differences"]
    assert "Judged differently (compared with --allow-other-judge): " in (tmp_path / "c" / "compare.md").read_text()


def test_compare_tells_checkpoints_apart_and_needs_run_json(tmp_path: Path, data: Path, capsys) -> None:
    """Two checkpoint judges served under one name differ in run.json's judge (their folders); a run folder
    without run.json cannot be checked, so it is refused unless --allow-other-judge."""
    a, b = _rank(tmp_path, data, "a"), _rank(tmp_path, data, "b")
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


@pytest.mark.parametrize("field, a_value, b_value, said", [
    (("weights_fingerprint",), "sha256:0a1b", "sha256:9f8e", "weights_fingerprint 'sha256:0a1b' vs 'sha256:9f8e'"),
    (("server_limits", "root"), "/ckpt/judge-a", "/ckpt/judge-b", "root '/ckpt/judge-a' vs '/ckpt/judge-b'"),
])  # fmt: skip
def test_compare_tells_weights_apart_when_both_runs_recorded_them(tmp_path: Path, data: Path, capsys,
                                                                  field: tuple[str, ...], a_value: str, b_value: str,
                                                                  said: str) -> None:
    """One checkpoint folder retrained in place between two ranks: same path, same served name, other weights. Each
    run.json records what its server said of them (judge-serve's weights_fingerprint, a vLLM server's loaded root):
    different values are refused, naming both; a run whose server said nothing (None) is no evidence of a
    difference, so the pair is compared."""
    a, b = _rank(tmp_path, data, "a"), _rank(tmp_path, data, "b")

    def record(folder: Path, value: str | None) -> None:
        run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        run["config"]["judge"] = "/ckpt/judge"  # the same checkpoint folder for both
        place = run
        for key in field[:-1]:
            place = place.setdefault(key, {})
        place[field[-1]] = value
        (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")

    record(a, a_value)
    record(b, b_value)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert f"the runs were judged differently ({said})" in err
    record(b, None)
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0
    record(b, a_value)
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0
