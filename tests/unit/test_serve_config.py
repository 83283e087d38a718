"""judge-serve configuration, CLI and checkpoint layout: no servers started."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

import pytest

from serve.cli import main, resolve_config, structured_outputs_notes
from judge.plumbing.config_files import resolve_config as resolve_settings
from serve.config import ConfigError, ServeConfig
from serve.launch import engine_command, engine_specs
from serve.layout import LayoutError, resolve_layout
from tests.support.console_scripts import console_script

CONFIG_DIR = Path(__file__).parents[2] / "configs" / "serve"


def _checkpoint(folder: Path, arch: str) -> Path:
    """A folder whose config.json names ``arch``; a classifier's has one label, as judge-train's export writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    labels = {"num_labels": 1} if arch.endswith("ForSequenceClassification") else {}
    (folder / "config.json").write_text(json.dumps({"architectures": [arch], **labels}), encoding="utf-8")
    return folder


def test_help_runs(capsys):
    """`judge-serve --help` prints usage and exits 0."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "--max-body-bytes" in capsys.readouterr().out


def test_console_script_help():
    """The installed `judge-serve` console script runs."""
    result = subprocess.run([console_script("judge-serve"), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "--api-key" in result.stdout


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_yaml_parses(path):
    """Every shipped serve YAML has only known keys, validates, and starts with the command that runs it."""
    resolve_settings(ServeConfig, path, {"model": "/some/checkpoint"}).validate()
    assert path.read_text(encoding="utf-8").startswith("# judge-serve")
    assert "judge-serve --config configs/serve/" + path.name in path.read_text(encoding="utf-8")


def test_flag_overrides_yaml(tmp_path):
    """Defaults, then YAML, then flags: a flag wins over the YAML, the YAML over the default."""
    yaml_path = tmp_path / "serve.yaml"
    yaml_path.write_text("model: /ckpt\nport: 9001\nmax_tokens: 100\nenable_prefix_caching: true\n", encoding="utf-8")
    config, _ = resolve_config(["--config", str(yaml_path), "--port", "9002", "--no-enable-prefix-caching"])
    assert (config.port, config.max_tokens, config.enable_prefix_caching) == (9002, 100, False)
    assert config.request_timeout_s == ServeConfig().request_timeout_s


def test_unknown_yaml_key_is_an_error(tmp_path):
    """A misspelt YAML key is refused, naming it."""
    yaml_path = tmp_path / "serve.yaml"
    yaml_path.write_text("model: /ckpt\nmax_token: 100\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="max_token"):
        resolve_config(["--config", str(yaml_path)])


@pytest.mark.parametrize(
    ("override", "field"),
    [({"model": ""}, "model"), ({"port": 0}, "port"), ({"gpu_memory_share": 1.5}, "gpu_memory_share"),
     ({"max_tokens": 4096, "max_model_len": 4096}, "max_tokens"), ({"pooling_memory_fraction": 1.0}, "pooling_memory_fraction"),
     ({"attached_probe_interval_s": 0}, "attached_probe_interval_s"),
     ({"port": 65536}, "port: must be at most 65535"),  # else bind() raises OverflowError, a traceback
     ({"log_level": "bogus"}, "log_level: unknown level 'bogus' \\(debug, info, warning, error\\)"),  # else after bind
     ({"criteria_classifier": "tfidf", "criteria_threshold": -0.5}, "criteria_threshold: a task-type probability")],
)  # fmt: skip
def test_bad_values_name_the_field(override, field):
    """validate() refuses impossible settings and names the field."""
    with pytest.raises(ConfigError, match=field):
        ServeConfig(**{"model": "/ckpt", **override}).validate()


def test_api_key_from_environment(monkeypatch):
    """With no --api-key, $JUDGE_SERVE_API_KEY is used (keeps the key out of `ps`)."""
    monkeypatch.setenv("JUDGE_SERVE_API_KEY", "from-env")
    config, _ = resolve_config(["--model", "/ckpt"])
    assert config.api_key == "from-env"
    assert config.to_dict()["api_key"] == "***"


def test_bad_checkpoint_exits_2(tmp_path, capsys):
    """A folder that is not a checkpoint is a clear error (exit 2), not a traceback."""
    assert main(["--model", str(tmp_path)]) == 2
    assert "config.json" in capsys.readouterr().err


def test_layout_seq2seq(tmp_path):
    """A causal LM folder is a seq2seq judge served by one generating engine."""
    layout = resolve_layout(_checkpoint(tmp_path / "ckpt", "Qwen2ForCausalLM"))
    assert (layout.kind, layout.generator_dir, layout.pooler_dir) == ("seq2seq", tmp_path / "ckpt", None)


def test_layout_regression_from_manifest(tmp_path):
    """A regression export names its generator in pollux_judge.json (train/export.py's layout)."""
    root = _checkpoint(tmp_path / "export", "Qwen2ForSequenceClassification")
    _checkpoint(root / "lm-weights", "Qwen2ForCausalLM")
    (root / "pollux_judge.json").write_text(json.dumps({"mode": "regression", "generator": "lm-weights", "prompt_version": "pollux-ru-v1"}))
    layout = resolve_layout(root)
    assert (layout.kind, layout.generator_dir, layout.pooler_dir, layout.prompt_version) == (
        "regression", root / "lm-weights", root, "pollux-ru-v1",
    )  # fmt: skip


def test_layout_regression_generator_subfolder_and_override(tmp_path):
    """Without a manifest the generator/ subfolder is used; --generator-model overrides both."""
    root = _checkpoint(tmp_path / "export", "Qwen2ForSequenceClassification")
    _checkpoint(root / "generator", "Qwen2ForCausalLM")
    other = _checkpoint(tmp_path / "other", "Qwen2ForCausalLM")
    assert resolve_layout(root).generator_dir == root / "generator"
    assert resolve_layout(root, generator_model=other).generator_dir == other


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda root: None, "names no generating model"),
        (lambda root: (root / "pollux_judge.json").write_text('{"generator": "missing"}'), "not a causal LM"),
        (lambda root: _checkpoint(root / "generator", "Qwen2ForSequenceClassification"), "names no generating model"),
    ],
    ids=["nothing", "manifest-points-nowhere", "generator-not-causal"],
)
def test_layout_regression_without_generator_is_refused(tmp_path, setup, message):
    """A regression checkpoint without a generating model is refused with what to do."""
    root = _checkpoint(tmp_path / "export", "Qwen2ForSequenceClassification")
    setup(root)
    with pytest.raises(LayoutError, match=message):
        resolve_layout(root)


@pytest.mark.parametrize(("fields", "labels"), [({}, 2), ({"num_labels": 3}, 3), ({"id2label": {"0": "a", "1": "b"}}, 2)],
                         ids=["no-label-count", "num_labels-3", "id2label-2"])
def test_a_classifier_of_other_than_one_label_is_refused(tmp_path, fields, labels):
    """A regression judge's head has one output. vLLM's pooler applies a softmax over a classifier of two labels or
    more (transformers' default when a config names neither num_labels nor id2label), and judge-serve would read the
    first label's probability as the head's value: refused at start, naming config.json's num_labels."""
    root = tmp_path / "classifier"
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForSequenceClassification"], **fields}))
    _checkpoint(root / "generator", "Qwen2ForCausalLM")
    with pytest.raises(LayoutError, match=rf"config.json: num_labels {labels}; a regression judge's score head has one"):
        resolve_layout(root)


def test_layout_unknown_architecture(tmp_path):
    """An architecture that is neither a causal LM nor a classifier is refused, naming it."""
    with pytest.raises(LayoutError, match="BertModel"):
        resolve_layout(_checkpoint(tmp_path / "ckpt", "BertModel"))


def test_memory_split_and_engine_commands(tmp_path):
    """A regression judge splits gpu_memory_share between a generating and a pooling engine (0.63 / 0.27)."""
    root = _checkpoint(tmp_path / "export", "Qwen2ForSequenceClassification")
    _checkpoint(root / "generator", "Qwen2ForCausalLM")
    config = ServeConfig(model=str(root), tensor_parallel_size=2, engine_args=["--seed", "1"]).validate()
    generator, pooler = engine_specs(config, resolve_layout(root))
    assert (generator.role, generator.memory_share, pooler.role, pooler.memory_share) == ("generator", 0.63, "pooler", 0.27)
    gen_cmd, pool_cmd = engine_command(generator, config, 1234), engine_command(pooler, config, 1235)
    assert gen_cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert gen_cmd[gen_cmd.index("--model") + 1] == str(root / "generator")
    assert pool_cmd[pool_cmd.index("--runner") + 1] == "pooling"
    # passthrough chat renders with thinking off, like judge-serve's own prompts; a pooling engine has no chat
    assert json.loads(gen_cmd[gen_cmd.index("--default-chat-template-kwargs") + 1]) == {"enable_thinking": False}
    assert "--default-chat-template-kwargs" not in pool_cmd
    assert pool_cmd[pool_cmd.index("--tensor-parallel-size") + 1] == "2"
    assert gen_cmd[-2:] == ["--seed", "1"]  # engine_args last, so they override
    seq2seq = ServeConfig(model=str(root / "generator")).validate()
    (only,) = engine_specs(seq2seq, resolve_layout(root / "generator"))
    assert only.memory_share == 0.9


def test_structured_outputs_backend_reaches_the_generating_engine_alone(tmp_path):
    """``structured_outputs_backend`` other than auto becomes vLLM's --structured-outputs-config.backend on the
    generating engine (the pooling engine decodes nothing); auto passes no flag, leaving vLLM's own choice; a backend
    judge-serve does not offer is refused with the choices named."""
    root = _checkpoint(tmp_path / "export", "Qwen2ForSequenceClassification")
    _checkpoint(root / "generator", "Qwen2ForCausalLM")
    config = ServeConfig(model=str(root), structured_outputs_backend="guidance").validate()
    generator, pooler = engine_specs(config, resolve_layout(root))
    gen_cmd, pool_cmd = engine_command(generator, config, 1234), engine_command(pooler, config, 1235)
    assert gen_cmd[gen_cmd.index("--structured-outputs-config.backend") + 1] == "guidance"
    assert "--structured-outputs-config.backend" not in pool_cmd
    auto = ServeConfig(model=str(root)).validate()
    assert auto.structured_outputs_backend == "auto"
    assert not [arg for arg in engine_command(generator, auto, 1234) if arg.startswith("--structured-outputs")]
    config_file = tmp_path / "serve.yaml"
    config_file.write_text("structured_outputs_backend: outlines\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        resolve_config(["--config", str(config_file), "--model", str(root)])
    assert str(refused.value) == (f"{config_file}: structured_outputs_backend: 'outlines' is not one of auto, "
                                  "xgrammar, guidance")


def test_a_feedback_bound_under_xgrammar_and_a_backend_for_an_attached_engine_are_said_at_start():
    """A feedback bound under xgrammar (named, or auto: vLLM's choice for the verdict regex) would show itself only
    as an engine_error on the first constrained judgment (the compile past VLLM_REGEX_COMPILATION_TIMEOUT_S):
    judge-serve says so at start, naming guidance. A backend set for an attached engine cannot reach it: said too.
    The defaults, and a bound under guidance, say nothing."""
    def notes(*argv):
        return structured_outputs_notes(resolve_config(["--model", "/ckpt", *argv])[0])

    assert notes() == [] and notes("--feedback-max-chars", "2000", "--structured-outputs-backend", "guidance") == []
    assert notes("--structured-outputs-backend", "xgrammar") == []  # no bound: the unbounded regex compiles at once
    bounded = notes("--feedback-max-chars", "2000")
    assert bounded == [(logging.WARNING, "feedback_max_chars 2000 under structured_outputs_backend auto (xgrammar): "
                        "the bounded verdict regex is compiled whole before decoding, longer the longer the bound, and "
                        "vLLM fails a constrained judgment whose compile outlasts VLLM_REGEX_COMPILATION_TIMEOUT_S "
                        "(5 s unless set) with an engine_error; structured_outputs_backend: guidance compiles it as "
                        "decoding goes (docs/serving.md)")]
    assert notes("--feedback-max-chars", "16", "--structured-outputs-backend", "xgrammar")[0][1].startswith(
        "feedback_max_chars 16 under structured_outputs_backend xgrammar: the bounded verdict regex ")
    attached = ["--generator-url", "http://127.0.0.1:9/v1", "--feedback-max-chars", "2000"]
    assert notes(*attached) == []  # the attached engine's backend is its own: nothing judge-serve could say of it
    assert notes(*attached, "--structured-outputs-backend", "guidance") == [(
        logging.WARNING, "structured_outputs_backend guidance does not reach the attached generating engine "
        "(generator_url): it decodes with the backend it was started with (give its vllm serve "
        "--structured-outputs-config.backend guidance)")]


@pytest.mark.parametrize(
    ("max_restarts", "backoff_s", "backoff_max_s", "expected"),
    [
        (3, 2.0, 60.0, [2.0, 4.0, 8.0, None]),  # the defaults: doubling, then past the limit
        (5, 10.0, 25.0, [10.0, 20.0, 25.0, 25.0, 25.0, None]),  # capped at backoff_max_s
        (0, 2.0, 60.0, [None]),  # no restarts: the first death is fatal
        (1, 0.0, 60.0, [0.0, None]),  # no wait at all
    ],
)
def test_restart_delay_doubles_to_its_cap_then_gives_up(max_restarts, backoff_s, backoff_max_s, expected):
    """The wait before restart n+1 (n restarts already in the window) is backoff_s * 2**n, capped; past
    engine_max_restarts there is none."""
    from serve.app import restart_delay

    config = ServeConfig(
        model="m", engine_max_restarts=max_restarts, engine_restart_backoff_s=backoff_s, engine_restart_backoff_max_s=backoff_max_s
    ).validate()
    assert [restart_delay(config, n) for n in range(len(expected))] == expected


@pytest.mark.parametrize(
    ("field", "value"),
    [("engine_max_restarts", -1), ("engine_restart_window_s", 0), ("engine_restart_backoff_s", -1.0), ("engine_stop_grace_s", -1.0)],
)
def test_restart_settings_are_checked(field, value):
    """A negative restart count, backoff or grace, or an empty window, is refused naming the field."""
    with pytest.raises(ConfigError, match=field):
        ServeConfig(model="m", **{field: value}).validate()


@pytest.mark.parametrize("level, httpx_level", [("info", logging.WARNING), ("warning", logging.WARNING), ("debug", logging.NOTSET)])
def test_engine_request_lines_only_at_debug(level, httpx_level):
    """judge-serve's HTTP client logs one line per engine request only at --log-level debug."""
    from serve.cli import CHATTY_LOGGERS, configure_logging

    try:
        configure_logging(level)
        assert [logging.getLogger(name).level for name in CHATTY_LOGGERS] == [httpx_level] * len(CHATTY_LOGGERS)
    finally:
        for name in CHATTY_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_each_launch_gets_its_own_engine_key_kept_off_the_command_line(monkeypatch, tmp_path):
    """Without $VLLM_API_KEY every launch makes a fresh secret; the engines get it through their environment
    (vLLM's VLLM_API_KEY), never on their command line, which run.json records and ``ps`` shows."""
    from serve.launch import EngineSpec, engine_command, engine_env, engine_key

    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    first, second = engine_key(), engine_key()
    assert first != second and len(first) >= 32
    config = ServeConfig(model=str(tmp_path)).validate()
    assert engine_env(config, first)["VLLM_API_KEY"] == first
    command = engine_command(EngineSpec("generator", tmp_path, "judge", 0.9, ""), config, 8001)
    assert first not in " ".join(command) and "--api-key" not in command
    monkeypatch.setenv("VLLM_API_KEY", "shared")
    assert engine_key() == "shared"


def test_cpu_worker_in_engine_turns_vllm_multiprocessing_off_for_the_engines_only(monkeypatch, tmp_path):
    """``cpu_worker_in_engine`` reaches the engines as VLLM_ENABLE_V1_MULTIPROCESSING=0 (vLLM's CPU platform then
    keeps the model in the engine-core process); off by default, where the engines' environment is judge-serve's own.
    That the engine then has no worker process is pinned on a live one in tests/integration/serving."""
    from serve.launch import engine_env

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in engine_env(ServeConfig(model=str(tmp_path)).validate())
    config = ServeConfig(model=str(tmp_path), cpu_worker_in_engine=True).validate()
    assert engine_env(config)["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ


def _number_fields() -> dict[str, type]:
    """ServeConfig's int and float fields (``criteria_threshold`` is ``float | None``)."""
    from judge.plumbing.config_files import field_types

    return {name: tp for name, tp in field_types(ServeConfig).items() if tp in (int, float, float | None)}


def test_every_number_setting_has_bounds():
    """A numeric field added later cannot go unchecked: each is in NUMBER_BOUNDS or checked on its own."""
    from serve.config import NUMBER_BOUNDS

    assert set(_number_fields()) == set(NUMBER_BOUNDS) | {"criteria_threshold", "reward_deadline_s"}


@pytest.mark.parametrize("name", sorted(n for n, tp in _number_fields().items() if tp is float))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_every_float_setting_must_be_finite(name, bad):
    """NaN passes every `< 0` and inf failed math.ceil (--shutdown-grace-s inf: OverflowError, a traceback) or an
    engine minutes later: validate() refuses both, naming the field."""
    expected = (f"reward_deadline_s: must be a positive, finite number of seconds, got {bad!r}"
                if name == "reward_deadline_s" else f"{name}: must be a finite number, got {bad!r}")
    with pytest.raises(ConfigError) as info:
        ServeConfig(model="/ckpt", **{name: bad}).validate()
    assert str(info.value) == expected


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_num_seqs", -5, "max_num_seqs: must be >= 0, got -5"),
        ("cpu_kv_cache_gib", -3, "cpu_kv_cache_gib: must be >= 0, got -3"),
        ("tensor_parallel_size", 0, "tensor_parallel_size: must be positive, got 0"),
        ("temperature", -0.5, "temperature: must be >= 0, got -0.5"),
        ("engine_restart_backoff_max_s", -1.0, "engine_restart_backoff_max_s: must be >= 0, got -1.0"),
        ("feedback_max_chars", -1, "feedback_max_chars: must be >= 0, got -1"),
        ("header_timeout_s", 0.0, "header_timeout_s: must be positive, got 0.0"),
        ("reward_engine_wait_s", -1.0, "reward_engine_wait_s: must be >= 0, got -1.0"),
        ("port", 0, "port: must be in (0, 65535], got 0"),
        ("port", 65536, "port: must be at most 65535, got 65536"),
        ("gpu_memory_share", 0.0, "gpu_memory_share: must be in (0, 1], got 0.0"),
        ("pooling_memory_fraction", 1.0, "pooling_memory_fraction: must be in (0, 1), got 1.0"),
        ("criteria_threshold", 1.5, "criteria_threshold: a task-type probability, from 0 to 1; got 1.5"),
    ],
)
def test_out_of_range_numbers_name_the_field(field, value, message):
    """Each number outside its range is refused at the start with its field's name and the range."""
    with pytest.raises(ConfigError) as info:
        ServeConfig(model="/ckpt", **{field: value}).validate()
    assert str(info.value) == message


def test_zero_where_it_means_something_still_validates():
    """0: vLLM's default (max_num_seqs, cpu_kv_cache_gib), greedy sampling, no restarts, no waits, unbounded feedback."""
    ServeConfig(model="/ckpt", max_num_seqs=0, cpu_kv_cache_gib=0, temperature=0.0, engine_max_restarts=0,
                engine_stop_grace_s=0.0, engine_restart_backoff_s=0.0, engine_restart_backoff_max_s=0.0,
                reward_engine_wait_s=0.0, shutdown_grace_s=0.0, feedback_max_chars=0, gpu_memory_share=1.0,
                port=65535, criteria_threshold=0.0).validate()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--shutdown-grace-s", "inf"], "shutdown_grace_s: must be a finite number, got inf"),
        (["--shutdown-grace-s", "nan"], "shutdown_grace_s: must be a finite number, got nan"),
        (["--temperature", "nan"], "temperature: must be a finite number, got nan"),
        (["--request-timeout-s", "nan"], "request_timeout_s: must be a finite number, got nan"),
        (["--max-num-seqs", "-5"], "max_num_seqs: must be >= 0, got -5"),
    ],
)
def test_print_config_refuses_a_bad_number_with_exit_2(flags, message, capsys):
    """`judge-serve --model M --print-config --shutdown-grace-s inf` is a usage error naming the field (it was an
    OverflowError traceback, exit 1)."""
    assert main(["--model", "M", "--print-config", *flags]) == 2
    err = capsys.readouterr().err
    assert err == f"judge-serve: error: {message}\n"


@pytest.mark.parametrize("verdict_format", ["integer", "auto"])
def test_constrained_decoding_with_an_integer_judge_is_refused_at_start(tmp_path, verdict_format):
    """constrained_decoding forces the tagged verdict, which an integer-format judge (set, or auto read off a folder
    named Pollux-4B-Judge) does not write: every /v1/judge without "constrained": false, and every /get_reward (its
    clients send no such field), would be refused. judge-serve refuses the combination at its start, naming both
    settings; the same judge without constrained_decoding, and a tagged judge with it, start."""
    from serve.app import resolved_verdict_format
    from serve.layout import CheckpointLayout

    four_b = _checkpoint(tmp_path / "Pollux-4B-Judge", "Qwen3ForCausalLM")
    layout = CheckpointLayout(kind="seq2seq", root=four_b, generator_dir=four_b)
    with pytest.raises(LayoutError, match=r"^constrained_decoding: true, but verdict_format is integer \(") as err:
        resolved_verdict_format(ServeConfig(model=str(four_b), verdict_format=verdict_format,
                                            constrained_decoding=True), layout)
    why = "verdict_format is set" if verdict_format == "integer" else "Pollux-4B-Judge"  # auto's reason names it
    assert why in str(err.value)
    assert resolved_verdict_format(ServeConfig(model=str(four_b), verdict_format=verdict_format),
                                   layout).verdict_format == "integer"
    tagged = _checkpoint(tmp_path / "tagged", "Qwen2ForCausalLM")
    assert resolved_verdict_format(ServeConfig(model=str(tagged), constrained_decoding=True),
                                   CheckpointLayout(kind="seq2seq", root=tagged, generator_dir=tagged)
                                   ).verdict_format == "tagged"


@pytest.mark.parametrize("key, problem", [
    ("abc,def", r"character 4 of the key is one of / \? # % ,"),
    (",", r"character 1 of the key is one of / \? # % ,"),
    (".", "the key is only dots"),
    ("..", "the key is only dots"),
    ("...", "the key is only dots"),
    ("Zx81kq0Pq9w3m4n5b6v7.py", r"the key ends in \.py, and OpenRLHF loads a --reward\.remote_url ending so as a "
                                r"Python file \(openrlhf/utils/agent\.py\); choose letters, digits and -\._~ "
                                r"\(secrets\.token_urlsafe\) not ending in \.py$"),
    ("abc.PY", r"the key ends in \.py"),
    ("abc.Py", r"the key ends in \.py"),
])
def test_a_reward_key_openrlhfs_url_cannot_carry_is_refused_at_start(key, problem, monkeypatch):
    """The reward key goes into OpenRLHF's --reward.remote_url, which OpenRLHF splits on commas
    (openrlhf/cli/train_ppo_ray.py): "abc,def" became two URLs, /get_reward/abc and def, and every sample got 401.
    A key of only dots is a dot-segment clients resolve away (/get_reward/.. is /). A URL ending in ".py" OpenRLHF
    loads as a reward-function file, and the trainer fails at start. Refused at start; the API key (a header, never
    in a URL) may hold a comma or end in ".py", and a reward key with dots among other characters passes."""
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", key)
    with pytest.raises(ConfigError, match=rf"^the reward key \(\$JUDGE_SERVE_REWARD_KEY\): {problem}"):
        ServeConfig(model="x").validate()
    for fine in ("a.b..c.", "a.pyc", "a.py.", "python", "py"):
        monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", fine)
        ServeConfig(model="x", api_key="abc,def.py").validate()


def test_judge_serve_refuses_its_own_key_variables(tmp_path):
    """judge-serve's api_key_env and reward_key_env, as its configuration names them, are refused for the
    classifier; the classifier's own variable passes."""
    base = dict(model=str(tmp_path), api_key_env="MY_SERVE_KEY", reward_key_env="MY_REWARD_KEY",
                criteria_classifier="llm", criteria_classifier_path="https://third.example/v1",
                criteria_classifier_model="m")
    for name in ("MY_SERVE_KEY", "MY_REWARD_KEY", "VLLM_API_KEY"):
        with pytest.raises(ConfigError, match=rf"^criteria_classifier_api_key_env: \${name} holds the judge's own "):
            ServeConfig(**base, criteria_classifier_api_key_env=name).validate()
    assert ServeConfig(**base, criteria_classifier_api_key_env="CLASSIFIER_API_KEY").validate()


@pytest.mark.parametrize("field", ["generator_url", "pooling_url"])
def test_an_engine_url_carrying_a_password_is_refused_naming_the_field_not_the_password(field):
    """``http://alice:pw@host`` was accepted, but urllib reads ``alice:pw@host`` as the host name: the /health probe
    never reached the engine, judge-serve stayed "starting", and its start error, logged, held the password. Refused
    at start, naming the field and where the key goes instead; the password is not echoed."""
    with pytest.raises(ConfigError, match=rf"^{field}: ") as err:
        ServeConfig(model="x", **{field: "http://alice:s3cr3t-pw@127.0.0.1:8001"}).validate()
    assert "s3cr3t" not in str(err.value) and "alice" not in str(err.value) and "$VLLM_API_KEY" in str(err.value)
    ServeConfig(model="x", **{field: "http://127.0.0.1:8001"}).validate()


@pytest.mark.parametrize("field", ["generator_url", "pooling_url"])
@pytest.mark.parametrize("url", ["127.0.0.1:8001", "localhost:8001", "ftp://127.0.0.1:8001", "http://", "http:///v1",
                                 "http://127.0.0.1:abc", "http://127.0.0.1:99999", "https//127.0.0.1:8001"])
def test_an_engine_url_that_is_no_http_url_of_a_host_and_port_is_refused_naming_the_field(field, url):
    """``--generator-url 127.0.0.1:8001`` (no scheme) was accepted: urllib cannot fetch it, so judge-serve waited the
    whole engine_start_timeout_s (900 s) saying nothing answered at that host and port, while the engine ran there,
    then exited 1; a port that is no number failed the start with urllib's bare "nonnumeric port". Refused at start
    (exit 2), naming the field and the form it takes."""
    with pytest.raises(ConfigError, match=rf"^{field}: .*\(give http://host:port\)$"):
        ServeConfig(model="x", **{field: url}).validate()
    for good in ("http://127.0.0.1:8001", "http://127.0.0.1:8001/v1", "https://engine.example/v1/", "http://engine"):
        ServeConfig(model="x", **{field: good}).validate()


def test_a_bad_key_inside_reward_rule_is_named_by_the_file_or_the_command_line(tmp_path, monkeypatch):
    """A top-level key of the YAML is refused naming the file; a key inside its reward_rule mapping was named by the
    setting alone. It is named by where the mapping was given: the file, or a flag over it."""
    monkeypatch.delenv("JUDGE_SERVE_API_KEY", raising=False)
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {tmp_path}\nreward_rule: {{scroe: 1}}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        resolve_config(["--config", str(path)])
    assert str(refused.value).startswith(f"{path}: reward_rule: unknown field(s) ['scroe']")
    with pytest.raises(ConfigError) as refused:
        resolve_config(["--config", str(path), "--reward-rule", '{"combine": "max"}'])
    assert str(refused.value).startswith("command line: reward_rule.combine")
    path.write_text(f"model: {tmp_path}\nmax_tokens: 0\n", encoding="utf-8")  # a top-level value: its own words
    with pytest.raises(ConfigError, match=r"^max_tokens: must be positive"):
        resolve_config(["--config", str(path)])
