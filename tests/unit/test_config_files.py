"""judge.plumbing.config_files: one field helper, one flag builder, one resolution (defaults -> YAML -> flags) for every job,
one flag style (dashes) with the old underscore spellings and `--flag true|false` still accepted."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

import pytest

from judge.plumbing.config_files import ConfigError, add_config_flags, given_flags, option, resolve_config
from tests.support.deep_json import nested_arrays


@dataclass
class Demo:
    output_dir: str = option("runs/x", "Run folder.")
    max_steps: int = option(-1, "Steps.")
    learning_rate: float = option(1e-5, "Peak learning rate.")
    resume: bool = option(False, "Continue.")
    prefix_caching: bool = option(True, "Cache prefixes.")
    deepspeed: str | None = option(None, "DeepSpeed JSON.")
    engine_args: list[str] = option([], "More engine flags.")
    k: list[int] = option([1, 5], "Budgets.", nargs="+")
    extra_body: dict = option({}, "Extra JSON.")
    mode: str = option("chat", "Mode.", choices=("chat", "completion"))


def _resolve(argv: list[str], yaml_text: str | None = None, tmp_path=None) -> Demo:
    parser = argparse.ArgumentParser()
    add_config_flags(parser, Demo)
    path = None
    if yaml_text is not None:
        path = tmp_path / "demo.yaml"
        path.write_text(yaml_text, encoding="utf-8")
    return resolve_config(Demo, path, given_flags(parser.parse_args(argv), Demo))


@pytest.mark.parametrize(
    "argv, field, value",
    [
        (["--output-dir", "a"], "output_dir", "a"),
        (["--output_dir", "a"], "output_dir", "a"),  # the old spelling
        (["--max-steps", "5"], "max_steps", 5),
        (["--max_steps", "5"], "max_steps", 5),
        (["--learning_rate", "2e-5"], "learning_rate", 2e-5),
        (["--resume"], "resume", True),
        (["--resume", "true"], "resume", True),  # train's old boolean form
        (["--resume", "false"], "resume", False),
        (["--no-prefix-caching"], "prefix_caching", False),  # serve/eval's old boolean form
        (["--prefix_caching", "false"], "prefix_caching", False),
        (["--deepspeed", "null"], "deepspeed", None),
        (["--engine-args", "--seed 0"], "engine_args", ["--seed", "0"]),  # shell words (serve's form)
        (["--engine-args", '["--seed", "0"]'], "engine_args", ["--seed", "0"]),  # JSON (eval's form)
        (["--k", "1", "2", "3"], "k", [1, 2, 3]),
        (["--extra-body", '{"constrained": true}'], "extra_body", {"constrained": True}),
        (["--mode", "completion"], "mode", "completion"),
    ],
)
def test_every_spelling_of_a_flag_sets_its_field(argv, field, value):
    """Dash flags, the old underscore spellings, and both boolean styles set the same field."""
    assert getattr(_resolve(argv), field) == value


def test_defaults_then_yaml_then_flags(tmp_path):
    """A flag beats the YAML, the YAML beats the default; `--deepspeed null` clears the YAML's value."""
    config = _resolve(["--max-steps", "7", "--deepspeed", "null", "--no-resume"],
                      "max_steps: 3\nlearning_rate: 3e-3\ndeepspeed: zero3.json\nresume: true\n", tmp_path)
    assert (config.max_steps, config.learning_rate, config.deepspeed, config.resume) == (7, 3e-3, None, False)
    assert config.output_dir == "runs/x" and config.k == [1, 5]
    assert Demo().engine_args is not Demo().engine_args  # list defaults are not shared between instances


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("max_step: 3\n", "unknown keys ['max_step']"),
        ("1: a\nfoo: b\n", "unknown keys [1, 'foo']"),  # a number beside a text key: sorting them raised TypeError
        ("max_steps: ten\n", "max_steps"),
        ("max_steps: 1.5\n", "expected an integer"),
        ("resume: maybe\n", "expected true or false"),
        ("mode: batch\n", "'batch' is not one of chat, completion"),
        ("engine_args: {seed: 0}\n", "engine_args: expected a list"),
        ("output_dir: null\n", "output_dir may not be null"),
        ("- a\n", "expected a mapping"),
        # Not YAML at all: the parser's line and column, never a traceback.
        ("a: 1\n  x: [1\n", "not valid YAML: mapping values are not allowed here line 2, column 4"),
        ("a: [1, 2\n", "not valid YAML: while parsing a flow sequence"),
    ],
)
def test_bad_yaml_names_the_key(tmp_path, yaml_text, message):
    """Unknown keys, wrong types and values outside the choices are ConfigErrors naming the key and the file."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*" if message != "expected a mapping" else message) as info:
        resolve_config(Demo, path)
    assert message in str(info.value)


def test_bad_yaml_is_a_usage_error_of_every_command(tmp_path, capsys):
    """Every command that takes --config stops with exit 2 and one line naming the file when it is not YAML."""
    import eval.cli
    import serve.cli
    import train.cli

    path = tmp_path / "bad.yaml"
    path.write_bytes(b"a: 1\n  x: [1\n")
    for main, argv in ((train.cli.main, []), (serve.cli.main, []), (eval.cli.main, ["run"]),
                       (eval.cli.main, ["mera", "ruhumaneval"])):
        try:
            code = main([*argv, "--config", str(path), *(["--out", str(tmp_path / "out")] if argv else [])])
        except SystemExit as exit_info:
            code = exit_info.code
        err = capsys.readouterr().err
        assert code == 2 and f"{path}: not valid YAML" in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "out").exists()


def test_bad_flags_are_usage_errors(capsys):
    """A flag value of the wrong type or outside the choices stops argparse with exit 2, naming the field."""
    for argv in (["--max-steps", "ten"], ["--mode", "batch"], ["--resume", "perhaps"], ["--no-resume", "x"]):
        with pytest.raises(SystemExit) as exit_info:
            _resolve(argv)
        assert exit_info.value.code == 2
    assert "max_steps" in capsys.readouterr().err


def test_a_flag_of_another_config_is_refused():
    """resolve_config refuses a field the dataclass does not have, naming the flag with dashes."""
    with pytest.raises(ConfigError, match="--score-loss-weight does not apply to the seq2seq recipe"):
        resolve_config(Demo, None, {"score_loss_weight": 2}, label="the seq2seq recipe")


def test_help_shows_dashes_only(monkeypatch):
    """--help lists the dash spelling and the boolean's --no- form; the underscore aliases are hidden."""
    # argparse wraps at $COLUMNS, else at the width of the terminal pytest was started from: a narrow one (or a CI
    # that sets COLUMNS=50) split "--no-resume sets it false" over two lines. One line per help text, everywhere.
    monkeypatch.setenv("COLUMNS", "1000")
    parser = argparse.ArgumentParser()
    add_config_flags(parser, Demo)
    text = parser.format_help()
    assert "--output-dir" in text and "--no-resume sets it false" in text
    assert "--output_dir" not in text and "--max_steps" not in text


def test_a_help_that_states_its_default_shows_no_second_one():
    """judge-serve --log-dir's help says its default (a fresh temporary folder) and printed "(default: '')" after it;
    across the three console scripts no option's help now gives two defaults, and one that states none still gets
    its value."""
    from tests.support.cli_parsers import parsers_by_prog

    doubles, log_dir, port, share = [], None, None, []
    for prog, parser in parsers_by_prog().items():
        for action in parser._actions:
            text = action.help or ""
            if prog == "judge-train data traces" and "--min-russian-share" in action.option_strings:
                share.append(text)
            if len(re.findall(r"\(default[: ]|\bdefaults to\b", text)) > 1:
                doubles.append(f"{prog} {'/'.join(action.option_strings)}: {text}")
            if prog == "judge-serve" and "--log-dir" in action.option_strings:
                log_dir = text
            if prog == "judge-serve" and "--port" in action.option_strings:
                port = text
    assert not doubles, "\n".join(doubles)
    assert log_dir is not None and log_dir.endswith("removed when judge-serve stops).") and "''" not in log_dir
    assert port is not None and port.endswith("(default: 8000)")
    # a help naming another setting's default (the seq2seq recipe's) still shows the field's own
    assert len(share) == 1 and share[0].endswith("whose default is the same (default: 0.5)"), share


def test_only_a_default_stated_with_a_colon_or_defaults_to_replaces_the_fields_own():
    """"(default the same …)" names another thing's default: the field's own value is still shown."""
    @dataclass
    class Shares:
        share: float = option(0.5, "Set it as the other recipe sets it (default the same there).")
        stated: str = option("", "A folder (default: a fresh temporary one).")
        named: str = option("", "The run's name; defaults to the folder's.")

    parser = argparse.ArgumentParser()
    add_config_flags(parser, Shares)
    helps = {action.dest: action.help for action in parser._actions}
    assert helps["share"].endswith("(default the same there). (default: 0.5)")
    assert helps["stated"] == "A folder (default: a fresh temporary one)."
    assert helps["named"] == "The run's name; defaults to the folder's."


# ---- every job's console script keeps its old spellings ------------------------------------------------------


def test_train_old_spellings_still_work(monkeypatch):
    """judge-train run: --output_dir, --learning_rate, --gradient_checkpointing false, --resume true (old) equal
    their dash spellings (new)."""
    from pathlib import Path

    from train.cli import build_run_parser
    from train.config import config_from_args

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    base = ["--config", "configs/train/tiny/regression.yaml"]
    old = config_from_args(build_run_parser().parse_args(
        [*base, "--output_dir", "runs/o", "--learning_rate", "5e-4", "--gradient_checkpointing", "false",
         "--resume", "true", "--score_loss_weight", "2"]))  # fmt: skip
    new = config_from_args(build_run_parser().parse_args(
        [*base, "--output-dir", "runs/o", "--learning-rate", "5e-4", "--no-gradient-checkpointing", "--resume",
         "--score-loss-weight", "2"]))  # fmt: skip
    assert old == new and (old.output_dir, old.learning_rate, old.resume, old.gradient_checkpointing) == (
        "runs/o", 5e-4, True, False)


def test_serve_eval_synthetic_and_mera_accept_both_spellings():
    """judge-serve, judge-eval run, judge-train data and judge-eval mera: --max_tokens equals --max-tokens."""
    from eval.cli import build_parser as eval_parser
    from eval.cli import resolve_run_config
    from eval.mera import cli as mera_cli
    from serve.cli import resolve_config as serve_config
    from train.synthetic.cli import build_parser as data_parser
    from train.synthetic.config import SplitConfig, load_config

    for spelling in ("--max-tokens", "--max_tokens"):
        assert serve_config(["--model", "/ckpt", spelling, "77"])[0].max_tokens == 77
        assert resolve_run_config(eval_parser().parse_args(["run", "--out", "o", spelling, "77"])).max_tokens == 77
        mera = mera_cli.config_from_args(mera_cli.build_parser().parse_args(["rutie", "--out", "o", spelling, "7"]))
        assert mera.max_tokens == 7
    for spelling in ("--validation-fraction", "--validation_fraction"):
        args = data_parser().parse_args(["split", "--input", "i", "--output", "o", spelling, "0.25"])
        assert load_config(SplitConfig, None, given_flags(args, SplitConfig)).validation_fraction == 0.25
    assert serve_config(["--model", "/ckpt", "--enforce_eager", "true"])[0].enforce_eager is True


# ---- untrusted YAML is bounded before work; wrong types are named, never a traceback ---------------------------

# Nine lines of `&x [*y, ...x10]` (1 KB): 10^9 strings once dataclasses.asdict or copy.deepcopy copy the config.
ALIAS_BOMB = "extra_body:\n  a: &a [" + ", ".join(['"x"'] * 10) + "]\n" + "".join(
    f"  {name}: &{name} [{', '.join([f'*{previous}'] * 10)}]\n" for previous, name in zip("abcdefgh", "bcdefghi"))


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    """A YAML alias bomb is refused while the file is read, naming it, before any value is built or copied."""
    from judge.plumbing.config_files import MAX_CONFIG_NODES

    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, path)
    assert str(info.value) == (f"{path}: more than {MAX_CONFIG_NODES:,} YAML values once its aliases (*name) are "
                               "expanded; a config file has a few hundred at most")


def test_aliases_within_the_bound_still_read(tmp_path):
    """Anchors and aliases are YAML a config may use: a value repeated a few times reads as before."""
    path = tmp_path / "ok.yaml"
    path.write_text("extra_body:\n  a: &a {top_p: 0.9}\n  b: *a\nengine_args: &e ['--seed', '0']\n", encoding="utf-8")
    assert resolve_config(Demo, path).extra_body == {"a": {"top_p": 0.9}, "b": {"top_p": 0.9}}


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        # A value holding itself: never ends (dataclasses.asdict recursed until RecursionError).
        ("extra_body: &a {x: *a}\n", "an alias (*name) inside the value it names, line 1: the value would never end"),
        ("extra_body: {a: " + nested_arrays(70) + "}\n", "nested more than 64 levels deep, line 1"),
        # Past what PyYAML's recursive composer can hold: RecursionError, a traceback, before.
        ("extra_body: {a: " + nested_arrays(3000) + "}\n",
         "nested too deeply to read (a config value nests at most 64 levels)"),
    ],
    ids=["recursive", "deep", "deeper-than-pyyaml"],
)
def test_endless_or_deep_yaml_is_refused(tmp_path, yaml_text, message):
    """A recursive alias or a value nested past the bound is a ConfigError naming the file."""
    path = tmp_path / "deep.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, path)
    assert str(info.value) == f"{path}: {message}"


def test_an_alias_cannot_carry_a_value_past_the_depth_bound(tmp_path):
    """Each node was checked once, at the first depth the walk met it (right to left: `c: *x`, shallow), so the
    same value repeated 60 levels down by `b` read: 120 levels where docs/settings.md says 64."""
    from judge.plumbing.config_files import read_config_file

    deep = nested_arrays(60, "1")  # 60 levels
    path = tmp_path / "deep-alias.yaml"
    path.write_text(f"a: &x {deep}\nb: {'[' * 60}*x{']' * 60}\nc: *x\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert str(info.value) == (f"{path}: nested more than 64 levels deep once its aliases (*name) are expanded "
                               "(120 levels), line 1")
    path.write_text(f"a: &x {deep}\nb: {deep}\nc: *x\n", encoding="utf-8")  # the alias used shallowly only
    raw = read_config_file(path)
    assert raw["a"] == raw["b"] == raw["c"] and str(raw["c"]).count("[") == 60


def test_the_shipped_configs_are_far_below_the_bound():
    """The bound's margin: every shipped config has under a hundredth of MAX_CONFIG_NODES (fewer than 100 values, as
    docs/settings.md says; it named the largest's count, which went stale as the configs changed)."""
    from pathlib import Path

    import yaml

    from judge.plumbing.config_files import MAX_CONFIG_NODES

    def size(node) -> int:
        parts = node.value if isinstance(node, yaml.SequenceNode) else [
            part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else []
        return 1 + sum(size(part) for part in parts)

    configs = sorted((Path(__file__).resolve().parents[2] / "configs").glob("**/*.yaml"))
    assert len(configs) > 15
    assert max(size(yaml.compose(p.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)) for p in configs) * 100 \
        < MAX_CONFIG_NODES


def test_every_config_reader_refuses_an_alias_bomb(tmp_path, capsys):
    """judge-train, judge-serve, judge-eval run, rank and mera, and judge-train data all read --config through the
    bounded reader: exit 2, one line naming the file, no folder made."""
    import eval.cli
    import serve.cli
    import train.cli
    import train.synthetic.cli

    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    out = ["--out", str(tmp_path / "out")]
    for main, argv in ((train.cli.main, ["--output-dir", str(tmp_path / "out")]), (serve.cli.main, []),
                       (eval.cli.main, ["run", *out]), (eval.cli.main, ["rank", *out]),
                       (eval.cli.main, ["mera", "ruhumaneval", *out]),
                       (train.synthetic.cli.main, ["split", "--input", "i", "--output", str(tmp_path / "out")])):
        try:
            code = main([*argv, "--config", str(path)])
        except SystemExit as exit_info:
            code = exit_info.code
        err = capsys.readouterr().err
        assert code == 2 and f"{path}: more than 10,000 YAML values" in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("max_steps: [1]\n", "max_steps: expected an integer, got a list"),
        ("max_steps: {a: 1}\n", "max_steps: expected an integer, got a mapping"),
        ("learning_rate: {a: 1}\n", "learning_rate: expected a number, got a mapping"),
        ("learning_rate: [1e-5]\n", "learning_rate: expected a number, got a list"),
        ("learning_rate: 1" + "0" * 400 + "\n", ("learning_rate: expected a number, got an integer too large for one "
                                                 "(10000000000000000000...)")),
        ("resume: [true]\n", "resume: expected true or false, got a list"),
        ("k: [[1]]\n", "k: expected an integer, got a list"),
        ("engine_args: [[1]]\n", "engine_args: expected text, got a list"),
        # Text where a number belongs: Python's "invalid literal for int() with base 10: '<all of it>'" was shown
        ("max_steps: " + "x" * 100 + "\n", "max_steps: expected an integer, got '" + "x" * 36 + "..."),
        ("learning_rate: fast\n", "learning_rate: expected a number, got 'fast'"),
        ("resume: " + "9" * 60 + "\n", "resume: expected true or false, got an integer of 60 digits"),
    ],
)
def test_a_list_or_mapping_where_a_number_belongs_is_named(tmp_path, yaml_text, message):
    """A YAML list or mapping for a scalar field names the field and the type it expected (int([1]) raised a
    TypeError, a traceback)."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"a": ' + nested_arrays(5000) + "}", "unreadable JSON: nested too deeply"),  # json.loads: RecursionError
        ('{"a": ' + nested_arrays(900) + "}", "nested more than 64 levels deep"),  # json reads it, asdict cannot
        ('{"a": 1' + "0" * 5000 + "}", ("unreadable JSON: a number too long to read (Exceeds the limit (4300 digits) "
                                        "for integer string conversion: value has 5001 digits)")),
        ('{"a": }', "invalid JSON (Expecting value at column 7)"),
    ],
    ids=["deeper-than-json", "deep", "long-number", "malformed"],
)
def test_unreadable_json_flags_are_named(text, message):
    """--extra-body JSON that json.loads cannot hold, or that nests past the bound, is named in the wording of
    every JSON reader here (judge.plumbing.json_reading), with the field."""
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, None, {"extra_body": text})
    assert str(info.value) == f"command line: extra_body: {message}"


def test_a_wrong_type_in_a_config_is_a_usage_error(tmp_path, capsys):
    """judge-eval run --config with `concurrency: [1]`: exit 2 naming the field and the file, no traceback."""
    import eval.cli

    path = tmp_path / "list.yaml"
    path.write_text("judge: http://127.0.0.1:9/v1\nconcurrency: [1]\n", encoding="utf-8")
    try:
        code = eval.cli.main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2 and f"{path}: concurrency: expected an integer, got a list" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("max_steps: 1" + "0" * 5000 + "\n", ("a value YAML cannot read: Exceeds the limit (4300 digits) for integer "
                                               "string conversion: value has 5001 digits")),
        ("output_dir: 2024-13-45\n", "a value YAML cannot read: month must be in 1..12"),
    ],
    ids=["long-integer", "impossible-date"],
)
def test_a_value_pyyaml_cannot_build_is_named(tmp_path, yaml_text, message):
    """PyYAML's constructors raise a bare ValueError (a traceback before) on an integer past Python's 4,300-digit
    limit or a date that cannot be: a ConfigError naming the file."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("max_steps: 5\nlearning_rate: 3.0e-3\nmax_steps: 7\n", "key 'max_steps' given twice (lines 1 and 3)"),
        # a nested mapping, a flow mapping on one line, and a quoted spelling of the same key
        ("extra_body:\n  top_p: 0.9\n  top_p: 0.5\n", "key 'top_p' given twice (lines 2 and 3)"),
        ("extra_body: {seed: 1, seed: 2}\n", "key 'seed' given twice (lines 1 and 1)"),
        ("mode: chat\n'mode': completion\n", "key 'mode' given twice (lines 1 and 2)"),
    ],
)
def test_a_key_given_twice_is_refused_with_both_lines(tmp_path, yaml_text, message):
    """PyYAML keeps a repeated key's last value without a word: `learning_rate: 1e-5` appended under a config's own
    `learning_rate` changed the run unseen. Now a ConfigError naming the file, the key and both lines."""
    path = tmp_path / "twice.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, path)
    assert str(info.value) == f"{path}: {message}; keep one"


def test_a_merged_key_may_be_overridden(tmp_path):
    """`<<: *base` then the same key is an override, not a repeat: the explicit value wins, as YAML says."""
    from judge.plumbing.config_files import read_config_file

    path = tmp_path / "merge.yaml"
    path.write_text("base: &b {top_p: 0.9, seed: 1}\nextra_body:\n  <<: *b\n  seed: 2\n", encoding="utf-8")
    assert read_config_file(path)["extra_body"] == {"top_p": 0.9, "seed": 2}


def test_an_anchored_mapping_holding_a_merge_is_no_repeat_when_named_again(tmp_path):
    """Constructing a merge rewrites the merged node with the keys it took in: `mid` (a merge of `base`, then its own
    `a: 2`) named again by `*mid` was refused as "key 'a' given twice (lines 1 and 5)", a file yaml.safe_load reads.
    The value is PyYAML's own reading, whatever it is (its nested merge gives top the base's `a`): the check adds a
    refusal, never another value."""
    import yaml

    from judge.plumbing.config_files import read_config_file

    path = tmp_path / "merge.yaml"
    path.write_text("base: &base {a: 1}\ntop:\n  <<: &mid\n    <<: *base\n    a: 2\n  b: 3\nother: *mid\n",
                    encoding="utf-8")
    assert read_config_file(path) == yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text", ["", "# only a comment\n\n"])
def test_an_empty_config_file_is_named_as_empty(tmp_path, capsys, text):
    """An empty --config is every default (the synthetic stages' configs may be); judge-train, which needs a recipe,
    says the file names no recipe, exit 2, not a field's error ("'recipe' must be one of [...], got None")."""
    import train.cli

    path = tmp_path / "empty.yaml"
    path.write_text(text, encoding="utf-8")
    assert resolve_config(Demo, path) == Demo()
    assert train.cli.main(["--config", str(path), "--output-dir", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (f"judge-train run: error: {path}: names no recipe: give 'recipe:' one of "
                                       "['classifier', 'grpo', 'regression', 'seq2seq'] (or run judge-train <recipe> "
                                       "--config FILE)\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("word", ["no", "off", "yes", "true"])
def test_an_unquoted_yaml_truth_word_in_a_text_field_is_refused_with_the_remedy(tmp_path, word):
    """PyYAML (YAML 1.1) reads an unquoted no/off/yes/true as a truth value and the word is gone: a text field took
    it as "false"/"true" without a word. Refused, saying to quote it; quoted, the word is the value."""
    path = tmp_path / "bad.yaml"
    path.write_text(f"output_dir: {word}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(Demo, path)
    truth = "false" if word in ("no", "off") else "true"
    assert str(info.value) == (f"{path}: output_dir: expected text, got {truth}: YAML reads an unquoted yes, no, on, "
                               "off, true or false as true or false, not as the word written; quote the word meant "
                               "('no', not no)")
    path.write_text(f"output_dir: '{word}'\n", encoding="utf-8")
    assert resolve_config(Demo, path).output_dir == word


@pytest.mark.parametrize("written", ["0755", "1.10", "10:30", "2024_01_05", "1e3", "0x1F", ".5"])
def test_an_unquoted_yaml_number_in_a_text_field_is_the_text_written(tmp_path, written):
    """PyYAML (YAML 1.1) reads 0755 as octal 493, 1.10 as 1.1, 10:30 as sexagesimal 630 and 2024_01_05 as
    20240105: a text field took the number's digits, not what the file says, without a word. A text field is text,
    so it takes the scalar as written; a number field still reads it as YAML does."""
    path = tmp_path / "demo.yaml"
    path.write_text(f"output_dir: {written}\ndeepspeed: {written}\nmax_steps: 0755\n", encoding="utf-8")
    config = resolve_config(Demo, path)
    assert (config.output_dir, config.deepspeed, config.max_steps) == (written, written, 493)


def test_unquoted_yaml_numbers_in_a_text_list_are_the_text_written(tmp_path):
    """Items of a list of text (engine_args: `--tokenizer-revision 1.10`) are text as the field is: 1.10 stays 1.10,
    not 1.1, and 0755 not 493; a quoted item and a number list (k) are read as YAML reads them."""
    path = tmp_path / "demo.yaml"
    path.write_text("engine_args: [--seed, 0755, '1.10', 1.10]\nk: [0755, 2]\n", encoding="utf-8")
    config = resolve_config(Demo, path)
    assert (config.engine_args, config.k) == (["--seed", "0755", "1.10", "1.10"], [493, 2])


def test_an_unquoted_yaml_number_merged_in_by_a_merge_key_is_the_text_written(tmp_path):
    """A text field set through `<<:` takes the text as written, as one set directly does; a key given beside the
    merge wins over the merged one, quoted or not."""
    from judge.plumbing.config_files import read_config_file

    path = tmp_path / "demo.yaml"
    path.write_text("<<: {output_dir: 0755, deepspeed: 1.10, engine_args: [1.10], mode: 0755, max_steps: 0755}\n"
                    "mode: 'chat'\n", encoding="utf-8")
    assert read_config_file(path, Demo) == {"output_dir": "0755", "deepspeed": "1.10", "engine_args": ["1.10"],
                                            "mode": "chat", "max_steps": 493}


def test_a_config_path_that_is_a_device_or_a_pipe_is_named_for_what_it_is(tmp_path):
    """judge-eval --config, judge-serve --config and the training recipes read YAML through read_config_file:
    /dev/null or a process substitution's pipe was "not found", a path that exists. A missing file still is."""
    import os

    from judge.plumbing.config_files import ConfigError, read_config_file, special_file_kind

    fifo = tmp_path / "serve.yaml"
    os.mkfifo(fifo)  # never opened: a reader would wait for a writer
    for path, kind in (("/dev/null", "a character device"), (str(fifo), "a pipe")):
        assert special_file_kind(path) == kind
        with pytest.raises(ConfigError) as err:
            read_config_file(path)
        assert str(err.value) == f"config file {path}: {kind}, not a regular file; give the YAML file (write a " \
                                 "stream to a file first)"
    assert special_file_kind(tmp_path) == special_file_kind(tmp_path / "missing") == ""
    with pytest.raises(ConfigError, match=r"not found$"):
        read_config_file(tmp_path / "missing.yaml")


def test_a_shipped_config_named_from_another_folder_says_where_it_is(tmp_path, monkeypatch):
    """The configs are addressed from the repository root (the quickstart's `--config configs/train/tiny/...`).
    Before: from any other folder, "config file configs/train/tiny/seq2seq.yaml not found", for a file that is there.
    Now the repository's file and the folder to run from are named; a path that is nowhere stays as it was."""
    from pathlib import Path

    from judge.plumbing.config_files import read_config_file

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        read_config_file("configs/train/tiny/seq2seq.yaml")
    assert str(err.value) == (f"config file configs/train/tiny/seq2seq.yaml not found in {tmp_path}; the "
                              f"repository's is {root / 'configs/train/tiny/seq2seq.yaml'}: run from {root}, where "
                              "the docs' relative paths start")
    with pytest.raises(ConfigError) as err:
        read_config_file("configs/train/tiny/no-such.yaml")
    assert str(err.value) == "config file configs/train/tiny/no-such.yaml not found"


def test_a_shipped_config_named_from_a_removed_folder_is_refused_in_one_line(tmp_path, monkeypatch):
    """A shell left in a folder since removed (a run folder deleted from under it): the relative path reads from
    nowhere. Before: the hint's Path.cwd() raised FileNotFoundError, a traceback where the refusal was one line."""
    from pathlib import Path

    from judge.plumbing.config_files import read_config_file

    root = Path(__file__).resolve().parents[2]
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(ConfigError) as err:
        read_config_file("configs/train/tiny/seq2seq.yaml")
    assert str(err.value) == ("config file configs/train/tiny/seq2seq.yaml not found in a folder that no longer "
                              f"exists; the repository's is {root / 'configs/train/tiny/seq2seq.yaml'}: run from "
                              f"{root}, where the docs' relative paths start")
