"""`judge-eval run` checks its config once: ``eval.judging.run.run`` validates it, refuses a judge no run could reach
and ``server_args`` beside a URL judge, then logs it; the CLI leaves all of that to ``run`` (every other caller,
``eval.ranking.rank`` included, gets the same checks), so each runs once, not once in the CLI and again in
``run``. ``_run_holding`` (the folder, the judge, the items) is stubbed: what is counted happens before it.
"""

from __future__ import annotations

import logging

import pytest

from eval.cli import main
from eval.judging import run as run_module
from eval.judging.config import RunConfig
from judge.plumbing.config_files import ConfigError

URL = "http://127.0.0.1:9/v1"  # never contacted: _run_holding, the only part that would, is stubbed


def _count_calls(monkeypatch, owner, name: str, calls: list[str]) -> None:
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def _stub_holding(monkeypatch, held: list) -> None:
    def holding(config, out, max_tokens_chosen=True, data=None, ranking=False):
        held.append(config)
        return {"request_failed": 0}

    monkeypatch.setattr(run_module, "_run_holding", holding)


def test_judge_eval_run_checks_its_config_once(tmp_path, monkeypatch, caplog):
    """One validation, one reachability check, one server_args check, then one config line, per run."""
    calls: list[str] = []
    held: list = []
    _count_calls(monkeypatch, RunConfig, "validate", calls)
    _count_calls(monkeypatch, run_module, "refuse_unreachable_judge", calls)
    _count_calls(monkeypatch, run_module, "refuse_server_args_for_url", calls)
    _stub_holding(monkeypatch, held)
    caplog.set_level(logging.INFO, logger="judge_eval")
    assert main(["run", "--judge", URL, "--out", str(tmp_path / "out"), "--data", "sample", "--no-progress"]) == 0
    assert calls == ["validate", "refuse_unreachable_judge", "refuse_server_args_for_url"]
    assert len(held) == 1 and held[0].judge == URL
    config_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("run config: ")]
    assert len(config_lines) == 1 and f'"judge": "{URL}"' in config_lines[0]


def test_a_judge_no_run_could_reach_is_refused_before_the_config_is_logged(tmp_path, monkeypatch, caplog, capsys):
    """A --judge that is no URL, folder or hub id: exit 2, its one line, no config line and no run folder."""
    held: list = []
    _stub_holding(monkeypatch, held)
    caplog.set_level(logging.INFO, logger="judge_eval")
    missing = tmp_path / "no" / "such" / "checkpoint"
    assert main(["run", "--judge", str(missing), "--out", str(tmp_path / "out"), "--data", "sample"]) == 2
    assert capsys.readouterr().err == (f"judge-eval run: error: judge: {missing}: no such folder, and not a hub id "
                                       "of the form owner/name (nor an http(s) URL)\n")
    assert held == [] and not (tmp_path / "out").exists()
    assert not [r for r in caplog.records if r.getMessage().startswith("run config: ")]


def test_run_called_directly_still_refuses_an_unreachable_judge(tmp_path, monkeypatch):
    """A caller of run() other than the CLI (rank, a script) gets the same check, before any folder is made."""
    held: list = []
    _stub_holding(monkeypatch, held)
    monkeypatch.delenv("JUDGE_URL_FOR_TEST", raising=False)
    with pytest.raises(ConfigError, match=r"^base_url_env: the environment variable JUDGE_URL_FOR_TEST is not set$"):
        run_module.run(RunConfig(base_url_env="JUDGE_URL_FOR_TEST", out=str(tmp_path / "out")))
    assert held == [] and not (tmp_path / "out").exists()
