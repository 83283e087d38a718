"""A mistyped option is one line naming the closest option of the command that was run, exit 2, not a usage of
forty lines above "unrecognized arguments" (judge.plumbing.config_files.ExactArgumentParser.error)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from judge.plumbing.config_files import ExactArgumentParser
from tests.support.console_scripts import console_script

ROOT = Path(__file__).resolve().parents[2]


def _refusal(capsys, parse) -> str:
    """What ``parse()`` wrote to stderr when it exited 2, as a console script's refusal does."""
    with pytest.raises(SystemExit) as exited:
        parse()
    assert exited.value.code == 2
    return capsys.readouterr().err


def _parser(with_commands: bool = False) -> ExactArgumentParser:
    parser = ExactArgumentParser(prog="tool")
    parser.add_argument("--data")
    parser.add_argument("--port", type=int)
    if not with_commands:
        return parser
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", prog="tool run")
    run.add_argument("--judge")
    run.add_argument("--out")
    commands.add_parser("eval", prog="tool eval").add_argument("--split")
    return parser


@pytest.mark.parametrize("argv, said", [
    (["--dat", "sample"], "tool: error: unrecognized arguments: --dat (did you mean --data?) sample; "
                          "`tool --help` lists the options"),
    (["--prot=3"], "tool: error: unrecognized arguments: --prot=3 (did you mean --port?); `tool --help` lists the "
                   "options"),
    # argparse reports a subcommand's leftovers from the top parser: the suggestion and the line's prog come from
    # the subcommand
    (["run", "--jugde", "x"], "tool run: error: unrecognized arguments: --jugde (did you mean --judge?) x; "
                              "`tool run --help` lists the options"),
    (["--zzzzzz"], "tool: error: unrecognized arguments: --zzzzzz; `tool --help` lists the options"),
    # the subcommand is the one argparse read, not a word equal to its name given as an option's value
    (["--data", "eval", "run", "--jugde", "x"], "tool run: error: unrecognized arguments: --jugde (did you mean "
                                                "--judge?) x; `tool run --help` lists the options"),
    # an option of the subcommand given before it is said so, not "did you mean" itself
    (["--judge=x", "run"], "tool run: error: unrecognized arguments: --judge=x (an option of `tool run`: give it "
                           "after its subcommand); `tool run --help` lists the options"),
    # a value joined by "=" holding spaces is one argument: the hint follows the whole of it, not its first word
    # (`--sever-args=["--config", (did you mean --server-args?) "x.yaml"]`)
    (["run", '--jugde=["a", "b c"]'], 'tool run: error: unrecognized arguments: --jugde=["a", "b c"] (did you mean '
                                      '--judge?); `tool run --help` lists the options'),
    # a value given as the next argument stays as given, after the flag's hint
    (["run", "--jugde", '["a", "b c"]'], 'tool run: error: unrecognized arguments: --jugde (did you mean --judge?) '
                                         '["a", "b c"]; `tool run --help` lists the options'),
], ids=["space", "equals", "subcommand", "nothing-close", "value-named-like-a-command", "before-its-subcommand",
        "equals-value-with-spaces", "next-argument-value-with-spaces"])
def test_an_unrecognized_option_is_one_line_with_the_closest_option(capsys, argv, said):
    with pytest.raises(SystemExit) as exited:
        _parser(with_commands="run" in argv).parse_args(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == said + "\n"
    assert captured.out == ""


def _required_parser() -> ExactArgumentParser:
    """A command with a short usage (argparse's own errors keep it above their line) and a required option."""
    parser = ExactArgumentParser(prog="tool")
    parser.add_argument("--predictions", required=True)
    parser.add_argument("--data")
    return parser


@pytest.mark.parametrize("argv, said", [
    # argparse stopped at the missing option, never naming the word it could not read
    (["--prediction", "x"], "tool: error: unrecognized arguments: --prediction (did you mean --predictions?); the "
                            "following arguments are required: --predictions; `tool --help` lists the options"),
    (["--predict=x", "--dat", "y"], "tool: error: unrecognized arguments: --predict=x (did you mean --predictions?) "
                                    "--dat (did you mean --data?); the following arguments are required: "
                                    "--predictions; `tool --help` lists the options"),
    # missing alone: one line too, not the usage above it (which a long usage already left out)
    ([], "tool: error: the following arguments are required: --predictions; `tool --help` lists the options"),
    # after a bare --: another program's words, none of ours
    (["--data", "y", "--", "--prediction"], "tool: error: the following arguments are required: --predictions; "
                                            "`tool --help` lists the options"),
], ids=["misspelt", "abbreviated-and-misspelt", "missing", "after-a-bare-dashdash"])
def test_a_missing_required_option_is_one_line_naming_any_option_not_recognized(capsys, argv, said):
    with pytest.raises(SystemExit) as exited:
        _required_parser().parse_args(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err == said + "\n"


@pytest.mark.parametrize("argv, said", [
    (["score", "--prediction", "runs/a"],
     "judge-eval score: error: unrecognized arguments: --prediction (did you mean --predictions?); the following "
     "arguments are required: --predictions; `judge-eval score --help` lists the options"),
    (["score", "--predict", "runs/a", "--data", "d.jsonl"],  # a prefix: abbreviations are never read (allow_abbrev)
     "judge-eval score: error: unrecognized arguments: --predict (did you mean --predictions?); the following "
     "arguments are required: --predictions; `judge-eval score --help` lists the options"),
    (["experts", "--out", "runs/experts"],
     "judge-eval experts: error: the following arguments are required: --data; `judge-eval experts --help` lists "
     "the options"),
    (["experts", "--dat", "d.jsonl", "--out", "runs/experts"],
     "judge-eval experts: error: unrecognized arguments: --dat (did you mean --data?); the following arguments are "
     "required: --data; `judge-eval experts --help` lists the options"),
], ids=["score-misspelt", "score-prefix", "experts-no-data", "experts-misspelt-data"])
def test_judge_eval_names_the_option_it_could_not_read_or_is_missing(capsys, argv, said):
    from eval.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == said + "\n"
    assert captured.out == ""


def test_other_argparse_errors_keep_the_usage(capsys):
    """A missing value is argparse's own error, with its usage: only unrecognized options changed."""
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["--port", "eight"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: tool ") and err.endswith("tool: error: argument --port: invalid int value: 'eight'\n")


def test_judge_train_with_a_mistyped_data_flag():
    """The case a newcomer meets: `judge-train --config ... --dat sample` (the recipe's options come from its config)."""
    done = subprocess.run([console_script("judge-train"), "--config",
                           "configs/train/tiny/seq2seq.yaml", "--dat", "sample"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == ("judge-train run: error: unrecognized arguments: --dat (did you mean --data?) sample; "
                           "`judge-train run --help` lists the options\n")


def test_another_error_of_a_command_with_a_long_usage_is_one_line(capsys):
    """judge-train's usage runs to 38 lines: a bad value (`--learning-rate abc`) printed all of them above its one
    line of error. A usage past a few lines is left out, the error naming --help instead; a short one is kept (the
    test above)."""
    from judge.plumbing.config_files import ExactArgumentParser

    parser = ExactArgumentParser(prog="long")
    for k in range(30):
        parser.add_argument(f"--option-number-{k}", type=int)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--option-number-3", "x"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("long: error: argument --option-number-3: invalid int value: 'x'; "
                                       "`long --help` lists the options\n")


@pytest.mark.parametrize("argv, said", [
    (["--judge", "runs/x/export", "--out", "runs/eval/x"],
     "tool: error: no command before --judge: `tool run --judge ...` (--judge is an option of `tool run`); the "
     "commands: run, eval; `tool --help` lists them"),
    (["--split=zero_shot"],
     "tool: error: no command before --split=zero_shot: `tool eval --split=zero_shot ...` (--split is an option of "
     "`tool eval`); the commands: run, eval; `tool --help` lists them"),
], ids=["space", "equals"])
def test_a_command_left_out_before_its_option_is_one_line_naming_the_command(capsys, argv, said):
    """Before: `judge-eval --judge runs/x/export --out ...` (the command left out, as judge-train allows for `run`)
    was argparse's usage and "invalid choice: 'runs/x/export'": the judge's folder taken for the command."""
    assert _refusal(capsys, lambda: _parser(with_commands=True).parse_args(argv)) == said + "\n"


def test_judge_eval_without_run_names_run(capsys):
    from eval.cli import main

    assert _refusal(capsys, lambda: main(["--judge", "runs/tiny-seq2seq/export", "--out", "runs/eval/tiny"])) == (
        "judge-eval: error: no command before --judge: `judge-eval run --judge ...` (--judge is an option of "
        "`judge-eval run`, `judge-eval rank`); the commands: run, score, compare, rank, convert, merge, experts, "
        "mera; `judge-eval --help` lists them\n")


def test_judge_eval_run_names_itself_and_keeps_a_json_value_whole(capsys):
    from eval.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "--judge", "runs/x/export", "--out", "runs/eval/x",
              '--sever-args=["--config", "configs/serve/tiny-cpu.yaml"]'])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        'judge-eval run: error: unrecognized arguments: --sever-args=["--config", "configs/serve/tiny-cpu.yaml"] '
        '(did you mean --server-args?); `judge-eval run --help` lists the options\n')


def test_a_required_option_missing_beside_an_equals_value_with_spaces_names_that_flag(capsys):
    with pytest.raises(SystemExit) as exited:
        _required_parser().parse_args(['--dat=a b'])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("tool: error: unrecognized arguments: --dat=a b (did you mean --data?); the "
                                       "following arguments are required: --predictions; `tool --help` lists the "
                                       "options\n")


_TRAINING = ["--learning-rate", "--learning_rate", "--lora", "--lora-r", "--lora_r", "--lr-scheduler-type",
             "--weight-decay", "--output-dir", "--output_dir", "--optim", "--server-args", "--max-length",
             "--max-steps", "--num-train-epochs", "--num_train_epochs"]


@pytest.mark.parametrize("flag, meant", [
    # initials of words of two letters or more, before spelling: by spelling alone --lr is nearest --lora
    ("--lr", "--learning-rate"),
    ("--wd", "--weight-decay"),
    # each word begins the option's word in its place, later words left off
    ("--out", "--output-dir"),
    ("--lr-sched", "--lr-scheduler-type"),
    ("--max-len", "--max-length"),
    # spelling, for a typo; a hidden --some_flag alias is named as its dashed flag
    ("--sever-args", "--server-args"),
    ("--epochs", "--num-train-epochs"),
    ("--lerning_rate", "--learning-rate"),
    ("--zzzzzz", ""),
])
def test_closest_option_reads_a_short_form_before_a_typo(flag, meant):
    from judge.plumbing.config_files import closest_option

    assert closest_option(flag, _TRAINING) == meant


def test_judge_train_lr_suggests_learning_rate(capsys):
    """`judge-train --lr 1e-3` names --learning-rate, not --lora (the nearest by spelling, of another meaning)."""
    from train.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--lr", "1e-3"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("judge-train run: error: unrecognized arguments: --lr (did you mean "
                                       "--learning-rate?) 1e-3; `judge-train run --help` lists the options\n")


def test_judge_train_submit_reads_the_same_short_form_after_its_dashdash():
    """`judge-train submit ... -- --lr 3e-4` is checked before a script is written, with the same rule as the line
    above."""
    from train.slurm_submit import SubmitError, check_judge_args

    with pytest.raises(SubmitError) as err:
        check_judge_args(ROOT / "configs/train/tiny/seq2seq.yaml", ["--lr", "3e-4"])
    assert str(err.value) == ("after --: judge-train run does not take --lr (did you mean --learning-rate?); "
                              "`judge-train run --help` lists its flags")


def _hint(main, argv: list[str], typo: str, capsys) -> str:
    """The option a console script's own parser suggests for ``typo``, "" for none."""
    import re

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {typo}" in err  # the suggestion's path, not another error before it
    said = re.search(re.escape(typo) + r" \(did you mean (--[\w-]+)\?\)", err)
    return said.group(1) if said else ""


@pytest.mark.parametrize("script, typo, meant", [
    # short forms and near names that each script's options answer
    ("judge-train", "--epochs", "--num-train-epochs"),  # the one option with the word "epochs"
    ("judge-train", "--lr", "--learning-rate"),
    ("judge-train", "--max-len", "--max-length"),
    ("judge-train", "--model-path", "--model-name-or-path"),
    ("judge-train", "--seed-value", "--seed"),  # an option's words and more
    ("judge-train", "--lora-rank", "--lora-r"),  # spelling before "an option and more" (--lora)
    ("judge-eval run", "--bs", "--batch-size"),
    ("judge-eval run", "--outdir", "--out"),
    ("judge-eval compare", "--nboot", "--n-boot"),
    ("judge-serve", "--max-length", "--max-model-len"),
    ("judge-serve", "--logdir", "--log-dir"),
    # none: no option of that meaning, and the names' two leading dashes count for no likeness (with them, "--bs"
    # reaches difflib's cutoff beside "--seed", "--lr" and "--eval" beside "--help")
    ("judge-train", "--bs", ""),  # the batch sizes are --global-batch-size and --per-device-*-batch-size
    ("judge-train", "--tp", ""),  # judge-train run has no tensor-parallel option of its own; never --help
    ("judge-eval run", "--lr", ""),  # evaluation has no learning rate; never --help
    ("judge-eval run", "--eval", ""),  # the command's own name, no option's word; never --help
    ("judge-eval run", "--n-boot", ""),  # --n-boot is judge-eval compare's, not --out
    ("judge-eval run", "--wd", ""),  # not --data
    ("judge-eval compare", "--bs", ""),  # not --seed
    ("judge-serve", "--tp", ""),  # the initials of --tensor-parallel-size are tps; not --dtype
    ("judge-serve", "--data", ""),  # judge-serve reads no data file; not --dtype
    ("judge-serve", "--lr", ""),  # not --log-dir
])
def test_each_console_script_suggests_an_option_of_its_own_meaning_or_none(capsys, script, typo, meant):
    from eval.cli import main as eval_main
    from serve.cli import main as serve_main
    from train.cli import main as train_main

    main, before = {"judge-train": (train_main, []), "judge-eval run": (eval_main, ["run"]),
                    "judge-eval compare": (eval_main, ["compare"]), "judge-serve": (serve_main, [])}[script]
    assert _hint(main, [*before, typo, "x"], typo, capsys) == meant


@pytest.mark.parametrize("flag", ["--hepl", "--eval", "--lr", "--tp", "--h"])
def test_closest_option_never_names_help(flag):
    from judge.plumbing.config_files import closest_option

    assert closest_option(flag, ["--help", "--data", "--learning-rate-warmup", "--tensor-parallel-size"]) != "--help"


@pytest.mark.parametrize("argv, said", [
    (["rn", "--judge", "x"], "tool: error: unknown command 'rn' (did you mean run?); the commands: run, eval; "
                             "`tool --help` lists them"),
    (["evl"], "tool: error: unknown command 'evl' (did you mean eval?); the commands: run, eval; `tool --help` "
              "lists them"),
    (["--port", "3", "evl", "--split", "x"], "tool: error: unknown command 'evl' (did you mean eval?); the "
                                             "commands: run, eval; `tool --help` lists them"),
    (["frobnicate"], "tool: error: unknown command 'frobnicate'; the commands: run, eval; `tool --help` lists them"),
], ids=["before-an-option", "alone", "after-a-top-option", "nothing-close"])
def test_a_misspelt_command_is_one_line_naming_it_and_the_closest_command(capsys, argv, said):
    """Before: `judge-eval scor --predictions X` said "no command before --predictions", never naming the word
    `scor` it could not read, and `judge-eval scor` alone printed argparse's usage above "invalid choice"."""
    assert _refusal(capsys, lambda: _parser(with_commands=True).parse_args(argv)) == said + "\n"


def test_a_misspelt_command_of_subparsers_without_a_dest_is_called_a_command(capsys):
    """The subparsers' dest names their kind (stage, task); argparse's default dest names nothing."""
    parser = ExactArgumentParser(prog="tool")
    parser.add_subparsers().add_parser("run")
    assert _refusal(capsys, lambda: parser.parse_args(["rn"])) == (
        "tool: error: unknown command 'rn' (did you mean run?); the commands: run; `tool --help` lists them\n")


def test_judge_eval_with_a_misspelt_score_names_score(capsys):
    from eval.cli import main

    assert _refusal(capsys, lambda: main(["scor", "--predictions", "runs/eval/tiny-seq2seq"])) == (
        "judge-eval: error: unknown command 'scor' (did you mean score?); the commands: run, score, compare, rank, "
        "convert, merge, experts, mera; `judge-eval --help` lists them\n")


def test_judge_eval_bench_an_alias_of_rank_is_no_unknown_command(capsys):
    """`bench` is an alias of `rank`: a wrong option on its line is refused by `judge-eval rank`, not called an
    unknown command."""
    from eval.cli import main

    assert _refusal(capsys, lambda: main(["bench", "--bogus", "x"])) == (
        "judge-eval rank: error: unrecognized arguments: --bogus x; `judge-eval rank --help` lists the options\n")


_TRAIN_COMMANDS = "run, classifier, grpo, criteria-classifier, build-data, submit, data, card"


@pytest.mark.parametrize("argv, said", [
    (["submt", "--config", "x"], "judge-train: error: unknown command 'submt' (did you mean submit?); "
                                 f"the commands: {_TRAIN_COMMANDS}; `judge-train --help` lists them"),
    (["configs/train/tiny/seq2seq.yaml"], "judge-train: error: unknown command 'configs/train/tiny/seq2seq.yaml' "
                                          "(a config file is given as `judge-train --config FILE`); "
                                          f"the commands: {_TRAIN_COMMANDS}; `judge-train --help` lists them"),
    # a config file named like a command is still a config file given without --config
    (["grpo.yaml"], "judge-train: error: unknown command 'grpo.yaml' (a config file is given as `judge-train "
                    f"--config FILE`); the commands: {_TRAIN_COMMANDS}; `judge-train --help` lists them"),
], ids=["misspelt", "config-without-flag", "config-named-like-a-command"])
def test_judge_train_with_an_unknown_command_is_one_line_naming_the_remedy(capsys, argv, said):
    """Before: "unknown command 'submt'" above judge-train's whole usage, naming no command and, for a config
    file given without --config, not saying that --config was left out."""
    from train.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err == said + "\n"


def test_a_misspelt_stage_of_judge_train_data_is_called_a_stage(capsys):
    """The subcommands of `judge-train data` are its stages (`dest="stage"`), and the refusal calls them so."""
    from train.synthetic.cli import main

    assert _refusal(capsys, lambda: main(["answer", "--output", "x"])) == (
        "judge-train data: error: unknown stage 'answer' (did you mean answers?); the stages: instructions, dedup, "
        "answers, annotate, split, traces; `judge-train data --help` lists them\n")
