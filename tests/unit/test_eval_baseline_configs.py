"""The baseline judges ship as the POLLUX paper ran them: model ids and the prompt each was given.

Sources: arXiv 2505.24616v3, Section 3.3 (the three reference models), Table 2 and the other table headers
("GPT-4o (2024-11-20)", "DeepSeek-R1", "M-Prometheus-14B"), Appendix M.1 (the English prompt is the one "for
generating synthetic data and running test data").
"""

from pathlib import Path

import pytest

from eval.judging.config import RunConfig
from judge.plumbing.config_files import resolve_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "eval"

# file -> (model id, prompt, backend, judge URL or base_url_env)
BASELINES = {
    "gpt-4o.yaml": ("gpt-4o-2024-11-20", "en", "chat", "OPENAI_BASE_URL"),
    "deepseek-r1.yaml": ("deepseek-ai/DeepSeek-R1", "en", "chat", "DEEPSEEK_BASE_URL"),
    "m-prometheus-14b.yaml": ("Unbabel/M-Prometheus-14B", "en", "chat", "http://127.0.0.1:8000/v1"),
}
MAX_TOKENS = {"gpt-4o.yaml": 1024, "deepseek-r1.yaml": 8192, "m-prometheus-14b.yaml": 1024}
# the POLLUX judges themselves get the Russian prompt of Appendix M.1
POLLUX = {"pollux-serve.yaml": "ru", "local-cpu.yaml": "ru", "tiny-cpu.yaml": "ru"}


def test_every_shipped_eval_config_is_pinned_here():
    """No eval YAML ships without its model and prompt pinned by this file."""
    assert sorted(p.name for p in CONFIGS.glob("*.yaml")) == sorted({**BASELINES, **POLLUX})


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_configs_pin_the_papers_models_and_english_prompt(name):
    """Each baseline names the exact model the paper evaluated and the English M.1 prompt, greedy, its token budget."""
    config = resolve_config(RunConfig, CONFIGS / name, {"out": "runs/x"})
    config.validate()
    model, prompt, backend, where = BASELINES[name]
    assert (config.model, config.prompt, config.backend, config.judge or config.base_url_env) == (model, prompt, backend, where)
    # The paper gives no sampling settings: greedy, and POLLUX's own 1,024 new tokens (its
    # src/vllm_offline_generation.py), more for R1, whose reasoning comes first: choices of this toolkit.
    assert (config.temperature, config.max_tokens) == (0.0, MAX_TOKENS[name])


@pytest.mark.parametrize("name", sorted(POLLUX))
def test_pollux_judge_configs_use_the_russian_prompt(name):
    """Configs for POLLUX judges render the Russian training prompt."""
    assert resolve_config(RunConfig, CONFIGS / name, {"out": "runs/x"}).prompt == POLLUX[name]


def test_baselines_read_a_verdict_without_end_and_pollux_judges_do_not():
    """Appendix M.1's English prompt shows its format line without [END] (rule 3; rule 6 asks for it after), and
    POLLUX's evaluation.py reads the score of such an output: the baselines read it leniently. POLLUX judges are
    trained to write [END]: their configs stay strict, the default."""
    lenient = {name: resolve_config(RunConfig, CONFIGS / name, {"out": "runs/x"}).lenient for name in {**BASELINES, **POLLUX}}
    assert lenient == {**dict.fromkeys(BASELINES, True), **dict.fromkeys(POLLUX, False)}
    assert RunConfig.__dataclass_fields__["lenient"].default is False


def test_a_baseline_folder_started_strict_is_refused_naming_lenient_and_resumes_under_no_lenient(tmp_path):
    """A baseline's folder started while its config read strictly holds ``lenient: false`` in its run key: the
    lenient config's resume is refused naming the setting, and ``--no-lenient`` (docs/fidelity.md) resumes it."""
    from eval.judging.run_settings import run_key
    from judge.plumbing.run_folder import ResumeMismatch, claim_run_folder

    out = tmp_path / "run"
    strict = resolve_config(RunConfig, CONFIGS / "gpt-4o.yaml", {"out": str(out), "lenient": False})
    claim_run_folder(out, run_key(strict), ("predictions.jsonl",))
    (out / "predictions.jsonl").write_text("{}\n", encoding="utf-8")
    shipped = resolve_config(RunConfig, CONFIGS / "gpt-4o.yaml", {"out": str(out)})
    with pytest.raises(ResumeMismatch, match=r"\(lenient: False -> True\)"):
        claim_run_folder(out, run_key(shipped), ("predictions.jsonl",))
    assert claim_run_folder(out, run_key(strict), ("predictions.jsonl",)) is True
