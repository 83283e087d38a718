"""A new user's first commands: bad input fails fast with a message naming the file and a documented exit code,
advice names flags the CLI takes, one convention for flags, and no noise or leftovers.

Most tests read the outcome of one batch of console commands (``outcomes``), each asserting the exact last line of
stderr and the exit code. Each command is its console script's ``main`` called in this process as the script calls
it, in the batch's folder and environment (``tests.support.first_contact.run_console_main``), one after another; three
are started as the console scripts themselves meanwhile (``AS_PROCESSES``): judge-serve on a taken port, and one start
each of judge-train and judge-eval, exit status and console logging those of a fresh interpreter. No engine starts and
nothing trains: the fast tier.

The tests of this subject that start heavy components are in tests/integration/training/test_first_use.py.

Why one module of ~530 lines: every refusal a console command shows shares the one batch, run once per file.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import logging
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

import judge
from tests.support.cli_parsers import collected_parsers
from tests.support.console_scripts import console_script
from tests.support.first_contact import Outcome, process_outcome, run_console_main
from tests.support.fixtures_train import REPO_ROOT, TINY_SEQ2SEQ
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat


def _fake_export(folder: Path) -> Path:
    """A judge-train run folder whose export/ has just enough for judge-serve to resolve its layout."""
    export = folder / "export"
    export.mkdir(parents=True)
    (export / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}), encoding="utf-8")
    (folder / "run.json").write_text("{}", encoding="utf-8")
    return export


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """Inputs of the batch: empty files, a run folder with no predictions, a YAML typo, a run folder, a port in use."""
    root = tmp_path_factory.mktemp("first-use")
    (root / "empty.jsonl").write_text("", encoding="utf-8")
    (root / "blank.jsonl").write_text("\n\n", encoding="utf-8")
    (root / "no-predictions").mkdir()
    (root / "no-predictions" / "predictions.jsonl").write_text("", encoding="utf-8")
    (root / "no-predictions" / "run.json").write_text(json.dumps({"config": {"data": "sample"}}), encoding="utf-8")
    (root / "typo.yaml").write_text("recipe: seq2seq\nlearning_rat: 1.0e-5\n", encoding="utf-8")
    _fake_export(root / "runs" / "my-judge")
    (root / "no-records.json").write_text("[]", encoding="utf-8")  # a file with content, but no record
    (root / "empty-shard").mkdir()  # an eval array's task with no records: an empty predictions.jsonl, no run.json
    (root / "empty-shard" / "predictions.jsonl").write_text("", encoding="utf-8")
    (root / "parse-false").mkdir()  # a score beside parse_ok false: which of the two holds is unknown
    (root / "parse-false" / "predictions.jsonl").write_text(json.dumps(
        {"id": "s0001", "judge": "j", "raw_output": "[RESULT] 3 [END]", "score": 3, "parse_ok": False}) + "\n",
        encoding="utf-8")
    unreadable = root / "unreadable.jsonl"
    if os.geteuid() != 0:  # root reads any file whatever its mode
        unreadable.write_text("{}\n", encoding="utf-8")
        unreadable.chmod(0)
    elif Path(WRITE_ONLY).is_file():  # write-only even to root: procfs checks its own mode bits
        unreadable.symlink_to(WRITE_ONLY)
    return root


#: A file that exists and that no one may read (where /proc has it): root's unreadable --data.
WRITE_ONLY = "/proc/sys/vm/compact_memory"


#: key -> the command, run in the scratch folder. Keys name what each test reads.
def _commands(root: Path, busy_port: int) -> dict[str, list[str]]:
    cfg = str(TINY_SEQ2SEQ)
    eval_url = "http://127.0.0.1:9/v1"  # never reached: each command is refused before any request
    return {
        "train_empty": ["judge-train", "--config", cfg, "--data", "empty.jsonl", "--output-dir", "train-empty"],
        "train_missing": ["judge-train", "run", "--config", cfg, "--data", "missing.jsonl", "--output-dir", "train-missing"],
        "train_typo": ["judge-train", "--config", "typo.yaml"],
        "train_no_base": ["judge-train", "--config", cfg, "--model-name-or-path", "runs/no-such-base", "--output-dir",
                          "train-no-base"],
        "train_regression_qwen3": ["judge-train", "--config", str(TINY_SEQ2SEQ.with_name("regression.yaml")),
                                   "--model-name-or-path", "tiny-qwen3", "--output-dir", "train-regression-qwen3"],
        "train_log_level_after": ["judge-train", "build-data", "--data", "sample", "--zero_shot", "drop", "--out",
                                  "rows.jsonl", "--log-level", "warning"],
        "submit_typo": ["judge-train", "submit", "--config", cfg, "--nodes", "1", "--gpus-per-node", "0", "--dry-run",
                        "--", "--lerning-rate", "3"],
        "run_empty": ["judge-eval", "run", "--judge", eval_url, "--data", "blank.jsonl", "--out", "run-empty"],
        "run_missing": ["judge-eval", "run", "--judge", eval_url, "--data", "missing.jsonl", "--out", "run-missing"],
        "run_bad_judge": ["judge-eval", "run", "--judge", "no-such-judge", "--out", "run-bad-judge"],
        "run_unreadable": ["judge-eval", "run", "--judge", eval_url, "--data", "unreadable.jsonl", "--out",
                           "run-unreadable"],
        "rank_unreadable": ["judge-eval", "rank", "--model", eval_url, "--judge", eval_url, "--data",
                            "unreadable.jsonl", "--out", "rank-unreadable"],
        "mera_unreadable": ["judge-eval", "mera", "rutie", "--endpoint", eval_url, "--model", "m", "--data",
                            "unreadable.jsonl", "--out", "mera-unreadable"],
        "run_no_records": ["judge-eval", "run", "--judge", eval_url, "--data", "no-records.json", "--out",
                           "run-no-records"],
        "rank_empty": ["judge-eval", "rank", "--model", eval_url, "--judge", eval_url, "--data", "no-records.json",
                       "--out", "rank-empty"],
        "mera_empty": ["judge-eval", "mera", "ruhumaneval", "--endpoint", eval_url, "--model", "m", "--data",
                       "empty.jsonl", "--out", "mera-empty"],
        "run_data_blank": ["judge-eval", "run", "--judge", eval_url, "--data", "", "--out", "run-data-blank"],
        "convert_data_blank": ["judge-eval", "convert", "--data", "", "--out", "converted-blank.jsonl"],
        "train_data_blank": ["judge-train", "--config", cfg, "--data", "", "--output-dir", "train-data-blank"],
        "score_parse_false": ["judge-eval", "score", "--predictions", "parse-false", "--data", "sample", "--n-boot",
                              "0"],
        "compare_same_run": ["judge-eval", "compare", "no-predictions", "./no-predictions/", "--n-boot", "0"],
        "merge_sample": ["judge-eval", "merge", "--data", "sample", "--out", "merged-sample", "empty-shard"],
        "convert_empty": ["judge-eval", "convert", "--data", "empty.jsonl", "--out", "converted.jsonl"],
        "experts_empty": ["judge-eval", "experts", "--data", "empty.jsonl", "--out", "experts"],
        # --n_boot: score and compare take underscore spellings too (an unknown flag would be its own exit 2)
        "score_no_predictions": ["judge-eval", "score", "--predictions", "no-predictions", "--n_boot", "5"],
        "score_missing": ["judge-eval", "score", "--predictions", "nowhere"],
        "compare_missing": ["judge-eval", "compare", "no-predictions", "nowhere", "--n_boot", "5"],
        "convert_sample": ["judge-eval", "convert", "--data", "sample", "--out", "sample.jsonl", "--log_level", "warning"],
        "serve_run_folder": ["judge-serve", "--model", "runs/my-judge", "--print-config"],
        "serve_export": ["judge-serve", "--model", "runs/my-judge/export", "--print-config"],
        "serve_port_in_use": ["judge-serve", "--model", "runs/my-judge/export", "--port", str(busy_port),
                              "--log-dir", "serve-port-logs"],
        **{f"help_eval_{sub}": ["judge-eval", sub, "--help"]
           for sub in ("run", "score", "compare", "rank", "convert", "experts")},
        "help_eval": ["judge-eval", "--help"],
        "help_serve": ["judge-serve", "--help"],
        "help_train": ["judge-train", "--help"],
        "help_train_run": ["judge-train", "run", "--help"],
        "help_eval_mera": ["judge-eval", "mera", "--help"],
        **{f"help_train_{sub}": ["judge-train", *sub.split("_"), "--help"]
           for sub in ("grpo", "build-data", "submit", "data", "data_traces", "card")},
    }


#: The commands started as console scripts: judge-serve's port check (it binds the port, as it would to serve), and
#: one start of judge-train and of judge-eval (--log-level warning after the subcommand: a fresh process's logging).
AS_PROCESSES = ("serve_port_in_use", "train_log_level_after", "convert_sample")


def _console_env() -> dict[str, str]:
    """This session's environment without judge-serve's key and without COLUMNS (a shell's or a CI's width): the
    mains called here and the scripts started both wrap --help at a pipe's 80 columns."""
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGE_SERVE_API_KEY", "COLUMNS")}
    return {**env, "WANDB_MODE": "disabled"}


def test_the_commands_environment_carries_no_exported_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert "COLUMNS" not in _console_env() and _console_env()["WANDB_MODE"] == "disabled"


@pytest.fixture(scope="module")
def outcomes(scratch) -> dict[str, Outcome]:
    """Every command of ``_commands`` run in the scratch folder: ``AS_PROCESSES`` started first, offline
    (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE), the others' mains called in this process meanwhile, one after another.
    Those mains keep the session's hub settings: huggingface_hub reads them once, at its import, which
    ``run_console_main`` cannot redo (it refuses the change), and none of them reaches the hub (each is refused
    before it loads a model or data from there)."""
    with socket.socket() as busy, contextlib.ExitStack() as processes:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        env = _console_env()
        commands = _commands(scratch, busy.getsockname()[1])
        started = {key: processes.enter_context(subprocess.Popen(
            [console_script(commands[key][0]), *commands[key][1:]], cwd=scratch, text=True,
            env={**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)) for key in AS_PROCESSES}
        ran = {key: run_console_main(argv[0], argv[1:], env, cwd=scratch)
               for key, argv in commands.items() if key not in started}
        return {**ran, **{key: process_outcome(proc) for key, proc in started.items()}}


# ------------------------------------------------------------------------------------------- bad input, fast


def test_judge_train_refuses_empty_or_missing_data_before_building_anything(outcomes, scratch):
    """judge-train: empty or missing data, or a missing base model, is exit 2 naming the file or field, and no run
    folder (base-model/, lock) is left."""
    empty, missing = outcomes["train_empty"], outcomes["train_missing"]
    assert (empty.code, empty.last_error_line) == (2, "judge-train run: error: data: empty.jsonl holds no records")
    assert (missing.code, missing.last_error_line) == (
        2, "judge-train run: error: data: missing.jsonl: no such file or folder")
    assert not (scratch / "train-empty").exists() and not (scratch / "train-missing").exists()
    assert "Traceback" not in empty.err + missing.err
    # A base model that is not there: runs/ exists here, so runs/no-such-base is a path (never a hub download).
    no_base = outcomes["train_no_base"]
    assert (no_base.code, no_base.last_error_line) == (
        2, "judge-train run: error: model_name_or_path: runs/no-such-base: no such folder (runs/ is a folder here, so "
           "this names a path, not a hub id)")
    assert not (scratch / "train-no-base").exists() and "Traceback" not in no_base.err
    # The regression model is Qwen2's: a Qwen3 base would load with weights dropped and others made up.
    qwen3 = outcomes["train_regression_qwen3"]
    assert (qwen3.code, qwen3.last_error_line) == (
        2, "judge-train run: error: model_name_or_path: the regression recipe trains Qwen2 bases (T-lite, T-pro, "
           "Qwen2.5); tiny-qwen3 is qwen3")
    assert not (scratch / "train-regression-qwen3").exists()


def test_judge_eval_refuses_empty_or_missing_inputs(outcomes, scratch):
    """run, convert, experts, score and compare: exit 2 and one line naming the file; run makes no folder."""
    expected = {
        "run_empty": "judge-eval run: error: --data blank.jsonl: the file is empty (no records to judge)",
        "run_missing": "judge-eval run: error: --data missing.jsonl: no such file",
        "run_bad_judge": "judge-eval run: error: judge: no-such-judge: no such folder, and not a hub id of the form "
                         "owner/name (nor an http(s) URL)",
        "convert_empty": "judge-eval convert: error: --data empty.jsonl: no records (empty.jsonl: 0 rows -> 0 "
                         "records); nothing to convert",
        "experts_empty": "judge-eval experts: error: --data empty.jsonl: no records; the experts' tables need "
                         "labelled rows",
        "score_no_predictions": "judge-eval score: error: no-predictions/predictions.jsonl: no predictions (the file "
                                "is empty); run `judge-eval run --out no-predictions` first, or rerun it if it "
                                "stopped",
        "score_missing": "judge-eval score: error: --predictions nowhere: not found; give a run folder written by "
                         "`judge-eval run` (or its predictions.jsonl)",
        "compare_missing": "judge-eval compare: error: nowhere: not found; compare takes run folders written by "
                           "`judge-eval score` (or by `judge-eval rank`)",
    }
    for key, line in expected.items():
        assert (key, outcomes[key].code, outcomes[key].last_error_line) == (key, 2, line)
        assert "Traceback" not in outcomes[key].err
    assert not (scratch / "run-empty").exists() and not (scratch / "run-missing").exists()
    assert not (scratch / "run-bad-judge").exists()
    assert not (scratch / "converted.jsonl").exists() and not (scratch / "experts").exists()


def test_an_unreadable_data_file_is_an_input_error_before_anything_is_made(outcomes, scratch):
    """run, rank and mera: a --data file that exists but cannot be read is exit 2 naming it, no traceback, no
    --out (run and rank re-raised the OSError as a server's; mera exited 1, a task error, leaving run.lock)."""
    if not (scratch / "unreadable.jsonl").is_file():
        pytest.skip(f"running as root without {WRITE_ONLY}: no file here is unreadable")
    for command, key in (("run", "run"), ("rank", "rank"), ("mera rutie", "mera")):
        outcome = outcomes[f"{key}_unreadable"]
        assert (outcome.code, outcome.last_error_line) == (
            2, f"judge-eval {command}: error: --data unreadable.jsonl: cannot be read (Permission denied)"), outcome.err
        assert "Traceback" not in outcome.err and not (scratch / f"{key}-unreadable").exists()


def test_data_without_records_is_refused_before_any_folder_is_made(outcomes, scratch):
    """A --data with content but no record (`[]`), or mera's empty file: exit 2 and one line, and no run folder
    (mera's held one kept a run.lock, rank's was left empty, run's exited 0 having judged nothing)."""
    expected = {
        "run_no_records": ("run-no-records", "judge-eval run: error: --data no-records.json: no records; nothing to "
                                             "judge"),
        "rank_empty": ("rank-empty", "judge-eval rank: error: data: no-records.json holds no instructions"),
        "mera_empty": ("mera-empty", "judge-eval mera ruhumaneval: error: empty.jsonl: no rows (an empty file, or "
                                     "blank lines only)"),
    }
    for key, (folder, line) in expected.items():
        assert (key, outcomes[key].code, outcomes[key].last_error_line) == (key, 2, line), outcomes[key].err
        assert "Traceback" not in outcomes[key].err and not (scratch / folder).exists(), key


def test_an_empty_data_flag_is_refused_alike_and_sample_works_in_merge(outcomes, scratch):
    """--data "" is no path (the current folder to convert and train on, the sample to run): refused in one line by
    each; --data sample names the bundled sample in merge as in every other command."""
    said = "empty; give a file, folder or dataset name (or `sample`)"
    for key, prefix in (("run_data_blank", "judge-eval run: error: --data"),
                        ("convert_data_blank", "judge-eval convert: error: --data"),
                        ("train_data_blank", "judge-train run: error: data")):
        assert (outcomes[key].code, outcomes[key].last_error_line) == (2, f"{prefix}: {said}"), outcomes[key].err
    for made in ("run-data-blank", "converted-blank.jsonl", "train-data-blank"):
        assert not (scratch / made).exists()
    merged = outcomes["merge_sample"]
    assert (merged.code, merged.out.strip()) == (
        0, f"merged 0 predictions from 1 shard -> {Path('merged-sample') / 'predictions.jsonl'} (no shard has a "
           "run.json: no record written)"), merged.err
    assert (scratch / "merged-sample" / "predictions.jsonl").read_text(encoding="utf-8") == ""


def test_a_score_beside_parse_ok_false_and_a_run_compared_with_itself_are_refused(outcomes):
    """A predictions row holding a score and parse_ok false is refused naming its line and field (score dropped the
    number; the POLLUX-eval line parsed raw_output again); compare refuses one run given twice (every delta 0)."""
    parse_false = outcomes["score_parse_false"]
    assert (parse_false.code, parse_false.last_error_line) == (
        2, "judge-eval score: error: parse-false/predictions.jsonl: line 1.score: 3 in a row with parse_ok false; "
           "`judge-eval run` writes no score beside a verdict that did not parse: set score to null, or parse_ok to "
           "true if the verdict parsed")
    same = outcomes["compare_same_run"]
    assert (same.code, same.last_error_line) == (
        2, "judge-eval compare: error: ./no-predictions/: given twice (the folder no-predictions); compare takes "
           "different runs")
    assert "Traceback" not in parse_false.err + same.err


def test_judge_serve_finds_a_port_in_use_before_any_engine_starts(outcomes, scratch):
    """A taken port: exit 2 with the port named, before an engine (or its log folder) exists."""
    busy = outcomes["serve_port_in_use"]
    assert busy.code == 2
    assert re.fullmatch(r"judge-serve: error: port \d+ on 127\.0\.0\.1 is already in use "
                        r"\(another judge-serve\?\); stop it or choose another with --port",
                        busy.last_error_line), busy.err
    assert not (scratch / "serve-port-logs").exists()  # start_engines never ran


def test_every_help_lists_its_exit_codes(outcomes):
    """Each command's --help ends with the exit codes it uses."""
    for key in [k for k in outcomes if k.startswith("help_")]:
        assert outcomes[key].code == 0, key
        text = " ".join(outcomes[key].out.split()).lower()
        assert "exit codes: 0" in text and " 2 " in text, (key, text[-400:])
    assert "3 some requests failed" in " ".join(outcomes["help_eval_run"].out.split())
    assert "a port already in use" in " ".join(outcomes["help_serve"].out.split())
    # docs/serving.md and docs/reliability.md: weights replaced under a running judge-serve stop it with exit 1
    assert "the checkpoint's weights changed under it" in " ".join(outcomes["help_serve"].out.split())


def test_the_tiny_serve_config_fits_a_default_run_and_forces_the_verdict_format():
    """configs/serve/tiny-cpu.yaml: its token cap admits judge-eval run's default max_tokens (a lower cap refused
    every request of the quickstart), and it carries the constrained decoding a one-minute judge needs to write a
    parseable verdict (which only the demo's flags knew)."""
    from eval.judging.config import RunConfig
    from judge.plumbing.config_files import resolve_config as resolve_settings
    from serve.config import ServeConfig

    config = resolve_settings(ServeConfig, REPO_ROOT / "configs/serve/tiny-cpu.yaml",
                              {"model": "runs/tiny-seq2seq/export"})
    config.validate()
    assert config.max_tokens >= RunConfig().max_tokens == 1024
    assert (config.constrained_decoding, config.feedback_max_chars) == (True, 16)
    assert (config.dtype, config.enforce_eager, config.cpu_worker_in_engine) == ("float32", True, True)


# ------------------------------------------------------------------------------------------- advice that works


def test_yaml_key_typo_says_did_you_mean(outcomes):
    """A misspelt key names the key it is close to, not a list of fifty."""
    typo = outcomes["train_typo"]
    assert (typo.code, typo.last_error_line) == (
        2, "judge-train run: error: typo.yaml: unknown keys ['learning_rat'] for Seq2SeqConfig; 'learning_rat': did "
           "you mean 'learning_rate'?")


def test_submit_checks_pass_through_arguments_before_rendering(outcomes):
    """`judge-train submit ... -- --lerning-rate 3` is refused at once, naming the flag meant; no script printed."""
    submit = outcomes["submit_typo"]
    assert (submit.code, submit.last_error_line) == (
        2, "judge-train submit: after --: judge-train run does not take --lerning-rate (did you mean "
           "--learning-rate?); `judge-train run --help` lists its flags")
    assert "#SBATCH" not in submit.out


def test_model_on_a_run_folder_points_at_its_export(outcomes):
    """--model on a judge-train run folder names the export folder to pass instead."""
    served = outcomes["serve_run_folder"]
    assert served.code == 2
    assert served.last_error_line.startswith(
        "judge-serve: error: runs/my-judge: a judge-train run folder, not a checkpoint; its judge is "
        "runs/my-judge/export (pass that folder)")


def test_one_convention_for_log_level_underscores_and_sample_data(outcomes, scratch):
    """--log-level after the subcommand, --zero_shot / --log_level spelt with underscores and --data sample work
    in judge-train and judge-eval alike; warning level keeps INFO lines off stderr."""
    rows, converted = outcomes["train_log_level_after"], outcomes["convert_sample"]
    assert rows.code == 0 and " INFO " not in rows.err, rows.err
    assert converted.code == 0 and " INFO " not in converted.err, converted.err
    n = len(judge.load_records(judge.sample_data_path()))
    assert converted.out.strip() == f"{judge.sample_data_path()}: {n} rows -> {n} records -> sample.jsonl"
    assert len((scratch / "sample.jsonl").read_text(encoding="utf-8").splitlines()) == n


#: Flags of other programs that messages name, with the program.
FOREIGN_FLAGS = {
    "--repo-type": "hf download",
    "--local-dir": "hf download",
    "--mem": "sbatch (given through --sbatch-arg)",
    "--exclusive": "sbatch (given through --sbatch-arg)",
    "--nproc_per_node": "torchrun (one judge-train process per GPU)",
    "--no-python": "torchrun (one judge-train process per GPU)",
}
#: A flag in a message, and the word after it when that word ends the phrase (``(--zero-shot allow)``, ``--x y;``):
#: a value, to check against the flag's choices (``--recipe with every field`` is prose, not a value).
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*[a-z0-9])(?:[ =]([A-Za-z_][\w-]*)(?=$|[)\],;`'\"]))?")
_MESSAGE_CALLS = {"print", "error", "warning", "info", "exception", "warn", "critical", "debug"}


def _message_strings(path: Path):
    """(line, text) of every string in a raised exception or a message call (print, log.*, parser.error, an
    ``...Error(...)``) of a source file."""
    def strings(node):
        return [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]

    seen = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        texts = []
        if isinstance(node, ast.Raise) and node.exc is not None:
            texts = strings(node.exc)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _MESSAGE_CALLS or name.endswith("Error"):
                texts = [text for arg in node.args for text in strings(arg)]
        for text in texts:
            if (node.lineno, text) not in seen:
                seen.add((node.lineno, text))
                yield node.lineno, text


def test_every_flag_a_message_suggests_is_one_the_cli_takes():
    """Every --flag in an error, warning or print of the toolkit is an option of one of its console scripts, spelt
    as its --help shows it (dashes), with a value among the flag's choices where it has them."""
    actions = {}
    for parser in collected_parsers():
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and action.help != "==SUPPRESS==":
                    actions.setdefault(option, action)
    assert {"--zero-shot", "--overwrite-output-dir", "--predictions", "--learning-rate"} <= set(actions)
    wrong, checked = [], 0
    for package in ("judge", "train", "serve", "eval"):
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            for line, text in _message_strings(path):
                for match in _FLAG.finditer(text):
                    flag, value = match.groups()
                    checked += 1
                    where = f"{path.relative_to(REPO_ROOT)}:{line}: {match.group(0)!r}"
                    if flag in FOREIGN_FLAGS:
                        continue
                    if flag not in actions:
                        wrong.append(f"{where}: no command takes {flag}")
                    elif actions[flag].choices and value and value not in actions[flag].choices:
                        wrong.append(f"{where}: {flag} takes {sorted(actions[flag].choices)}")
    assert checked > 50  # the scan reads the messages (about a hundred flags today)
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------------------------------------------------- quiet and tidy


def test_trained_judge_is_served_under_its_run_name(outcomes):
    """judge-serve on runs/NAME/export serves the judge as NAME (its predictions then say NAME, not export)."""
    served = outcomes["serve_export"]
    assert served.code == 0, served.err
    assert json.loads(served.out)["served_model_name"] == "my-judge"


def test_health_polls_stay_out_of_the_access_log():
    """uvicorn's access lines for /health and /ready are dropped below debug; other routes and debug keep them."""
    from serve.quiet_logs import quiet_health_polls

    access = logging.getLogger("uvicorn.access")

    def kept(path: str) -> bool:
        record = access.makeRecord("uvicorn.access", logging.INFO, __file__, 0, '%s - "%s %s HTTP/%s" %d',
                                   ("127.0.0.1:5", "GET", path, "1.1", 200), None)
        return access.filter(record)

    try:
        quiet_health_polls("info")
        assert [kept(p) for p in ("/ready", "/health", "/health?verbose=1", "/v1/judge", "/v1/models")] == [
            False, False, False, True, True]
        quiet_health_polls("debug")
        assert kept("/ready") and kept("/health")
    finally:
        quiet_health_polls("debug")  # leaves no filter behind


def test_a_temporary_log_folder_is_removed_when_judge_serve_stops_unless_it_failed(tmp_path, caplog):
    """The log folder judge-serve makes for itself (no --log-dir) is gone after it stops; a given one stays. After a
    failed start it stays too, and judge-serve says so: the start error named a log in it (vLLM's root cause can sit
    above the tail it quotes), and the folder was removed before anyone could read it."""
    import logging

    from serve.config import ServeConfig
    from serve.supervision import ServerState, stop_engines

    class Stopped:  # an engine already stopped: stop_engines asks it again
        def __init__(self, owned: bool) -> None:
            self.owned = owned

        def stop(self) -> None:
            return None

    cases = [(temporary, status, owned) for temporary in (True, False) for status in ("draining", "failed")
             for owned in (True, False)]
    for temporary, status, owned in cases:
        folder = tmp_path / f"logs-{temporary}-{status}-{owned}"
        folder.mkdir()
        (folder / "generator.log").write_text("engine output\n", encoding="utf-8")
        state = ServerState(config=ServeConfig(model="x"), layout=None, log_dir=folder, log_dir_is_temporary=temporary,
                            status=status, engines={"generator": Stopped(owned)})
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="judge_serve"):
            asyncio.run(stop_engines(state))
        kept = status == "failed" and owned  # an attached engine's logs are not in the folder: nothing to keep
        assert folder.exists() is not (temporary and not kept)
        said = [r.getMessage() for r in caplog.records if "temporary log folder" in r.getMessage()]
        assert said == ([] if not temporary else [f"removed the temporary log folder {folder} (give --log-dir to keep "
                                                  "the engine logs)"] if not kept else
                        [f"kept the temporary log folder {folder}: judge-serve failed, and the logs of the engines it "
                         "started are there (remove it when read; --log-dir chooses the folder)"])


def test_re_export_keeps_the_cards_evaluation_and_drops_trls_readme(tmp_path):
    """A --resume re-export keeps the evaluation section `judge-train card --run` wrote; trl's README in the run
    folder is removed, any other README kept."""
    from train.export import _drop_trainer_card
    from train.model_card import evaluation_section

    export = tmp_path / "export"
    export.mkdir()
    card = "# j\n\nintro\n\n## Evaluation\n\n| Test | MAE |\n|---|---|\n| Standard | 0.5 |\n\n## Provenance\n\n- x\n"
    (export / "README.md").write_text(card, encoding="utf-8")
    assert evaluation_section(export) == "## Evaluation\n\n| Test | MAE |\n|---|---|\n| Standard | 0.5 |\n\n"
    (export / "README.md").write_text(card.replace("| Test | MAE |\n|---|---|\n| Standard | 0.5 |",
                                                   "Not evaluated yet. Judge and score ..."), encoding="utf-8")
    assert evaluation_section(export) is None

    (tmp_path / "README.md").write_text("# Model Card for run\n\nThis model is a fine-tuned version of [None](x).\n"
                                        "It has been trained using [TRL](https://github.com/huggingface/trl).\n")
    _drop_trainer_card(tmp_path)
    assert not (tmp_path / "README.md").exists()
    (tmp_path / "README.md").write_text("# my notes\n")
    _drop_trainer_card(tmp_path)
    assert (tmp_path / "README.md").read_text() == "# my notes\n"


def test_compare_with_out_prints_the_headline_only(tmp_path):
    """compare --out writes compare.md/json/html and prints the headline and where they are, not the tables."""
    from eval.cli import main

    records = judge.load_records(judge.sample_data_path())[:12]
    data = tmp_path / "small.jsonl"
    judge.write_jsonl(records, data)
    for name, score in (("ones", 1), ("twos", 2)):
        verdict = f"[FEEDBACK] x [RESULT] {score} [END]"
        with ScriptedEndpoint(vllm_chat(verdict)) as server:
            assert main(["run", "--judge", server.base_url, "--data", str(data), "--out", str(tmp_path / name),
                         "--name", name, "--no-progress", "--max-tokens", "32"]) == 0
        assert main(["score", "--predictions", str(tmp_path / name), "--n-boot", "20"]) == 0
    compared = run_console_main("judge-eval", ["compare", "ones", "twos", "--out", "cmp", "--n-boot", "20"],
                                cwd=tmp_path)
    assert compared.code == 0, compared.err
    lines = compared.out.strip().splitlines()
    assert lines[0] == "Judge comparison (baseline: ones)"
    assert lines[-2:] == ["tables: cmp/compare.md, cmp/compare.json", "compare.html: cmp/compare.html"]
    assert len(lines) < 12 and "|" not in compared.out  # no table on the console
    assert "twos vs ones" in (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
