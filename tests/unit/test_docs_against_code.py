"""What README.md and docs/*.md say of the commands, checked against the code that decides it: a flag given to a
command in a code span or block is one that command's parser takes, a default the docs give a flag is the
parser's, a `JUDGE_*` variable the docs name is one a script or the code reads (and every variable an sbatch
script reads is named in the docs), the exit codes docs/evaluation.md lists for `run` and `rank` are those their
`--help` lists, and a `metrics.json` key named with its section is in that section. Each failure names the page,
the line and what differs. The first pages' command blocks are also run against `--help` in
tests/unit/test_first_hour_docs.py; this file reads every page without starting a process, from the parsers the
console scripts build.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

import judge
from tests.support.cli_parsers import parsers_by_prog

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CONSOLE_SCRIPTS = ("judge-train", "judge-serve", "judge-eval")
#: Shell words that end one command's arguments (the next command's flags are not its own).
SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")", "$(", ">", ">>", "<", "2>", "2>&1"}
#: Words after which a console script's name is the command that runs, not an argument of another one.
COMMAND_PREFIXES = {"nohup", "exec", "env", "srun", "/usr/bin/time", "time"}
#: A subcommand's other name: its parser's prog names it by its own (`judge-eval bench` is rank's old name).
ALIASES = {"bench": "rank"}


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    return parsers_by_prog()


def _where(page: Path, line: int) -> str:
    return f"{page.relative_to(REPO)}:{line}"


def code_segments(page: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each code block's command (its ``\\``-continued lines joined) and each inline code span."""
    lines = page.read_text(encoding="utf-8").splitlines()
    prose: list[tuple[int, str]] = []
    in_block, command, start = False, "", 0
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            prose.append((number, line))
            continue
        command, start = (command + " " + line, start) if command else (line, number)
        if not line.rstrip().endswith("\\"):
            yield start, command.replace("\\ ", " ")
            command = ""
    text, starts = "", []
    for number, line in prose:
        starts.append((len(text), number))
        text += line + "\n"
    for span in re.finditer(r"`([^`]+)`", text):
        line = max(number for offset, number in starts if offset <= span.start())
        yield line, span.group(1).replace("\n", " ")


def _words(segment: str) -> list[str]:
    """The shell words of a segment, separators apart; a segment shlex cannot split (a quote cut off) by spaces."""
    lexer = shlex.shlex(segment, posix=True, punctuation_chars=True)
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return segment.split()


def _command(words: list[str], parsers: dict[str, argparse.ArgumentParser]) -> tuple[str, int]:
    """The parser's prog a console script's words run (``judge-eval mera rutie``), and how many words name it."""
    prog, used = words[0].rsplit("/", 1)[-1], 1
    while used < len(words) and words[used] == "--log-level":  # taken before the subcommand too (split_log_level)
        used += 2
    if prog == "judge-train" and (used >= len(words) or f"judge-train {words[used]}" not in parsers):
        return "judge-train run", used  # `judge-train --config ...` is `judge-train run --config ...`
    while used < len(words) and f"{prog} {ALIASES.get(words[used], words[used])}" in parsers:
        prog, used = f"{prog} {ALIASES.get(words[used], words[used])}", used + 1
    return prog, used


def segment_flags(segment: str, parsers: dict[str, argparse.ArgumentParser]) -> list[tuple[str, str]]:
    """(command, flag) of each flag a code segment gives a console script, as the shell would run the segment."""
    words, found, prog, i = _words(segment), [], None, 0
    while i < len(words):
        word, before = words[i], words[i - 1] if i else ""
        if word.rsplit("/", 1)[-1] in CONSOLE_SCRIPTS and (
                not before or before in SEPARATORS or before in COMMAND_PREFIXES
                or re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", before)):
            prog, used = _command(words[i:], parsers)
            i += used
            continue
        if word in SEPARATORS:
            prog = None
        elif prog and word == "--":
            # `judge-train submit ... -- --flag`: what follows is the job's `judge-train run` line
            prog = "judge-train run" if prog == "judge-train submit" else None
        elif prog and re.fullmatch(r"--[a-z][a-z0-9_-]*(=.*)?", word):
            found.append((prog, word.split("=", 1)[0]))
        i += 1
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def test_every_flag_the_docs_give_a_command_is_one_that_command_takes(parsers):
    """A flag after `judge-train`, `judge-serve` or `judge-eval` in a code span or block is an option of the parser
    that command line reaches (`judge-eval mera rutie`, `judge-train data traces`, the job's `judge-train run`
    after `submit ... --`): a renamed or removed flag in a page sends its reader to an argparse error."""
    wrong, checked = [], 0
    for page in PAGES:
        for line, segment in code_segments(page):
            for prog, flag in segment_flags(segment, parsers):
                checked += 1
                if flag == "--log-level":
                    continue  # every console script takes it, before or after the subcommand (split_log_level)
                # a command named without its subcommand (`judge-eval mera`): any of its subcommands' flags
                taken = set().union(*(_options(parsers[p]) for p in parsers if p == prog or p.startswith(prog + " ")))
                if flag not in taken:
                    wrong.append(f"{_where(page, line)}: {prog} takes no {flag}")
    assert checked > 200, checked  # the scan reads the pages (about 270 flags today)
    assert not wrong, "flags the docs give commands that do not take them:\n" + "\n".join(wrong)


def test_the_flag_scan_follows_the_shell(parsers):
    """The scan gives a flag to the command the shell runs it with: not past a pipe, not to a console script's name
    given as another program's argument, nor inside a quoted value; the job's flags after `submit --` are
    `judge-train run`'s."""
    segment = ("JUDGE_X=1 judge-eval --log-level debug mera rutie --mode chat | tee --append log && "
               "python bench/engine_start.py --arms judge-serve --rounds 2; judge-eval run --server-args "
               "'[\"--seed\", \"0\"]' --engine-args '--seed 0'; judge-train submit --nodes 2 -- --max-steps 5 "
               "# --not-a-flag")
    assert segment_flags(segment, parsers) == [
        ("judge-eval mera rutie", "--mode"), ("judge-eval run", "--server-args"), ("judge-eval run", "--engine-args"),
        ("judge-train submit", "--nodes"), ("judge-train run", "--max-steps")]
    assert segment_flags("judge-train --config c.yaml --max-steps 5", parsers) == [
        ("judge-train run", "--config"), ("judge-train run", "--max-steps")]
    assert segment_flags("judge-eval bench --model x", parsers) == [("judge-eval rank", "--model")]


def _numeric_defaults(parsers: dict[str, argparse.ArgumentParser]) -> dict[str, set[float]]:
    """Flag -> the numeric defaults its parsers give it (a config flag's default is its dataclass field's)."""
    from eval.judging.config import RunConfig
    from eval.mera.config import HumanEvalConfig, RutieConfig
    from eval.ranking.rank import RankConfig
    from serve.config import ServeConfig
    from train.config import RECIPES
    from train.synthetic import config as data_config

    classes = [RunConfig, HumanEvalConfig, RutieConfig, RankConfig, ServeConfig, *RECIPES.values(),
               *(c for c in vars(data_config).values() if isinstance(c, type) and dataclasses.is_dataclass(c))]
    fields = {}
    for cls in classes:
        for field in dataclasses.fields(cls):
            if field.default is not dataclasses.MISSING:
                fields.setdefault(field.name, []).append(field.default)
    found: dict[str, set[float]] = {}
    for parser in parsers.values():
        for action in parser._actions:
            values = fields.get(action.dest, []) if action.default == argparse.SUPPRESS else [action.default]
            for option in action.option_strings:
                for value in values:
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        found.setdefault(option, set()).add(float(value))
                    elif isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value):
                        found.setdefault(option, set()).add(float(value))
    return found


#: A flag and the number the docs give as its default: "`--flag` (900 s)", "`--flag` (512)", "`--flag`, default 2",
#: "`--flag` seconds (default 120".
_STATED_DEFAULT = re.compile(r"`(--[a-z][a-z0-9-]*)`(?:'s)?,? *\((?:default:? *)?(\d[\d,]*(?:\.\d+)?) *(?:s|MiB)?[,;)]"
                             r"|`(--[a-z][a-z0-9-]*)`[^`.;()]{0,30}?\(?\bdefault:? *(\d[\d,]*(?:\.\d+)?)\b")


def stated_default_errors(text: str, where: str, defaults: dict[str, set[float]], options: set[str]) -> list[str]:
    """What is wrong with each flag default ``text`` states (``_STATED_DEFAULT``), by line: a number no parser taking
    the flag has as its default, or a flag no parser takes (a renamed flag whose default a page still gives)."""
    wrong = []
    for match in _STATED_DEFAULT.finditer(text):
        flag, stated = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        line = text.count("\n", 0, match.start()) + 1
        if flag not in options:
            wrong.append(f"{where}:{line}: {flag} (default {stated}) is an option of no command")
        elif flag in defaults and float(stated.replace(",", "")) not in defaults[flag]:
            wrong.append(f"{where}:{line}: {flag} default {stated}, the code's {sorted(defaults[flag])}")
    return wrong


def test_every_default_the_docs_state_for_a_flag_is_its_default(parsers):
    """A number a page gives as a flag's default ("`--connect-timeout-s` seconds (default 120", "`--max-connections`
    (512)") is the default of a parser that takes the flag, or of the config field behind it. A flag whose parser
    default is None (resolved later: `submit --cpus-per-task`, the template's 16) is not checked; a flag no parser
    takes is wrong."""
    defaults = _numeric_defaults(parsers)
    options = set().union(*(_options(parser) for parser in parsers.values()))
    wrong, checked = [], 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        checked += sum(bool((m.group(1) or m.group(3)) in defaults) for m in _STATED_DEFAULT.finditer(text))
        wrong += stated_default_errors(text, str(page.relative_to(REPO)), defaults, options)
    assert checked > 12, checked  # the scan reads the pages (about 20 stated defaults today)
    assert not wrong, "defaults the docs state that the code does not have:\n" + "\n".join(wrong)


def test_a_default_stated_for_a_flag_no_command_takes_is_wrong(parsers):
    """Before: a default stated for a flag no parser takes (`--engine-start-timeout` for `--engine-start-timeout-s`)
    was passed over, as one whose default the parser leaves to later is."""
    defaults = _numeric_defaults(parsers)
    options = set().union(*(_options(parser) for parser in parsers.values()))
    text = ("judge-serve waits `--engine-start-timeout-s` (900 s) for its engines.\n"
            "`--engine-start-timeout` (900 s) and `--cpus-per-task` (default 16), `--max-connections` (513).\n")
    assert stated_default_errors(text, "page.md", defaults, options) == [
        "page.md:2: --engine-start-timeout (default 900) is an option of no command",
        "page.md:2: --max-connections default 513, the code's [512.0]"]


def _sbatch_texts() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted((REPO / "slurm").glob("*.sbatch"))}


def test_every_judge_variable_the_docs_name_is_read_by_a_script_or_the_code():
    """A `JUDGE_*` variable in a page is one an sbatch script or the Python code uses: a renamed variable in a page
    is a setting the job silently never sees."""
    known = set()
    for text in _sbatch_texts().values():
        known |= set(re.findall(r"\bJUDGE_[A-Z0-9_]*[A-Z0-9]", text))
    for package in ("judge", "train", "serve", "eval"):
        for path in (REPO / package).rglob("*.py"):
            known |= set(re.findall(r"\bJUDGE_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    wrong, checked = [], 0
    for page in [*PAGES, REPO / "slurm" / "README.md"]:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for variable in re.findall(r"\bJUDGE_[A-Z0-9_]*[A-Z0-9]", line):
                checked += 1
                if variable not in known:
                    wrong.append(f"{_where(page, number)}: {variable} is read by no slurm/*.sbatch and no code")
    assert checked > 50, checked
    assert not wrong, "\n".join(wrong)


def test_every_variable_an_sbatch_script_reads_is_named_in_the_docs():
    """Each `JUDGE_*` setting an sbatch script takes from its environment (`${JUDGE_X:-default}`, `${JUDGE_X:?}`,
    `${JUDGE_X-}`) is named in docs/slurm.md or another page: a setting no page names is one no user sets."""
    docs = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    named = set(re.findall(r"\bJUDGE_[A-Z0-9_]*[A-Z0-9]", docs))
    missing, checked = [], 0
    for name, text in _sbatch_texts().items():
        for variable in sorted(set(re.findall(r"\$\{(JUDGE_[A-Z0-9_]+):?[-?]", text))):
            checked += 1
            if variable not in named:
                missing.append(f"slurm/{name}: {variable} is named in no page")
    assert checked > 20, checked  # the scripts' settings (about 40 today)
    assert not missing, "\n".join(missing)


def test_the_exit_codes_the_docs_list_for_run_and_rank_are_the_ones_their_help_lists():
    """docs/evaluation.md's "**Exit codes** of `run` and `rank`" list the codes `judge-eval run --help` and
    `judge-eval rank --help` list (eval.cli.EXIT_CODES): the page said 130 where the help stopped at 4."""
    from eval.cli import EXIT_CODES

    text = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
    start = text.index("**Exit codes** of `run` and `rank`:")
    paragraph = text[start:text.index("\n\n", start)]
    stated = {int(code) for code in re.findall(r"(?:: |; )(\d+) ", " ".join(paragraph.split()))}
    assert stated == set(EXIT_CODES["run"]) == set(EXIT_CODES["rank"]), (stated, EXIT_CODES["run"].keys())


def test_every_metrics_json_key_the_docs_name_by_its_section_is_in_that_section():
    """A `metrics.json` key a page names with its section (`notes.n_cut_scored`, `settings.bootstrap_unit`,
    `validity.settings.ceiling_failures`) is a field of that section's record (judge/metrics_json): docs/validity.md
    named the validity section's `ceiling_failures` as `settings.`'s, a key the file's top-level settings lacks."""
    from judge.metrics_json.metrics import Notes, PolluxOfficial, Settings
    from judge.metrics_json.validity import SectionSettings

    sections = {"settings": Settings, "notes": Notes, "pollux_official": PolluxOfficial,
                "validity.settings": SectionSettings}
    wrong, checked = [], 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"`((?:validity\.)?(?:settings|notes|pollux_official))\.([a-z_]+)`", text):
            section, key = match.groups()
            checked += 1
            if key not in {field.name for field in dataclasses.fields(sections[section])}:
                line = text.count("\n", 0, match.start()) + 1
                wrong.append(f"{_where(page, line)}: metrics.json's {section} has no {key}")
    assert checked > 10, checked  # the scan reads the pages (about 20 keys today)
    assert not wrong, "\n".join(wrong)


def test_compares_n_boot_0_is_said_to_keep_the_failed_verdicts_mcnemar_call(parsers):
    """Under `compare --n-boot 0` the failed verdicts' McNemar call is still made (an exact test, no resample: the
    headline calls it and the decision reads it); `judge-eval compare --help` and docs/evaluation.md said 0 meant
    "no intervals, p-values or calls"."""
    action = next(a for a in parsers["judge-eval compare"]._actions if "--n-boot" in a.option_strings)
    help_text = " ".join(action.help.split())
    assert help_text.startswith("Paired bootstrap resamples: 0 (") and "McNemar" in help_text.split(")")[0], help_text
    text = " ".join((REPO / "docs" / "evaluation.md").read_text(encoding="utf-8").split())
    start = text.index("`--n-boot` (on `score`, `compare` and `rank`) is **0** (")
    assert "McNemar" in text[start:text.index(") or at least **10**", start)], text[start:start + 300]


def _top_level_names(source: Path) -> dict[str, ast.AST]:
    """A module's top-level names (defined, assigned or imported) and the node that binds each."""
    names: dict[str, ast.AST] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
    return names


def _class_attributes(node: ast.ClassDef) -> set[str]:
    """What a class's body defines, assigns or annotates, and what its methods assign to ``self`` (not their local
    variables: a method's ``instruction = ...`` is no attribute a page may cite)."""
    found = set()
    for child in node.body:
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(child.name)
        elif isinstance(child, (ast.Assign, ast.AnnAssign)):
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            found.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    for child in ast.walk(node):
        if (isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Store)
                and isinstance(child.value, ast.Name) and child.value.id == "self"):
            found.add(child.attr)
    return found


def unresolved_code_name(dotted: str) -> str | None:
    """Why ``judge.verdicts.split_at_last_think_close`` (a name of the toolkit's packages) names nothing in the
    source, else None: its longest module prefix, then a top-level name of that module (followed through a
    ``from X import name`` into X), then an attribute of that class. Read from the source, never imported."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        folder = REPO.joinpath(*parts[:cut])
        module = folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")
        if module.is_file():
            break
    else:
        return f"no module {parts[0]}"
    rest = parts[cut:]
    for _ in range(5):  # re-exports: judge.RecordColumns is judge.record_columns's, loaded on first use
        if not rest:
            return None
        names = _top_level_names(module)
        if rest[0] not in names and module == REPO / "judge" / "__init__.py" and rest[0] in judge._MODULE_OF:
            # judge's contract names, loaded on first use by its module __getattr__ (judge._EXPORTS)
            module = REPO.joinpath(*judge._MODULE_OF[rest[0]].split(".")).with_suffix(".py")
            continue
        if rest[0] not in names:
            return f"{'.'.join(parts[:len(parts) - len(rest)])} has no {rest[0]}"
        node = names[rest[0]]
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            origin = REPO.joinpath(*node.module.split("."))
            module = origin / "__init__.py" if origin.is_dir() else origin.with_suffix(".py")
            if not module.is_file():
                return None  # a third-party name: not ours to check
            rest = [next(a.name for a in node.names if (a.asname or a.name) == rest[0]), *rest[1:]]
            continue
        if len(rest) > 1 and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"{'.'.join(parts[:len(parts) - len(rest) + 1])} is a function: no attribute {rest[1]} to cite"
        if len(rest) > 1 and isinstance(node, ast.ClassDef) and rest[1] not in _class_attributes(node):
            return f"{'.'.join(parts[:len(parts) - len(rest) + 1])} has no attribute {rest[1]}"
        return None
    return None


def test_every_code_name_the_docs_cite_is_in_the_source():
    """A `judge.…`, `eval.…`, `train.…` or `serve.…` name in a page's code span (`judge.verdicts.bare_answer`,
    `eval.scoring.compare.decision`) is a module, a name of it or an attribute of its class: names this toolkit
    removes or renames (helpers only tests called, such as `train.regression.refuse_trained_head`) must leave no
    page citing them."""
    pattern = re.compile(r"`((?:judge|eval|train|serve)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?`")
    wrong, checked = [], 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            if match.group(1).endswith((".sbatch", ".jsonl")):  # slurm/eval.sbatch, a data file: no module
                continue
            checked += 1
            why = unresolved_code_name(match.group(1))
            if why:
                wrong.append(f"{_where(page, text.count(chr(10), 0, match.start()) + 1)}: `{match.group(1)}`: {why}")
    assert checked > 100, checked  # the scan reads the pages (about 260 names today)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("dotted", "resolves"), [
    ("judge.verdicts.split_at_last_think_close", True),
    ("judge.RecordColumns.expert_ids", True),  # a re-export, then an attribute set in __init__
    ("eval.scoring.compare.decision", True),
    ("train.regression.refuse_trained_head", False),  # removed: only tests called it
    ("eval.validity.agreement.agreement_classes", False),  # removed likewise
    ("judge.verdicts.no_such_name", False),
    ("judge.RecordColumns.no_such_attribute", False),
    ("judge.RecordColumns.instruction", False),  # only a local variable of one of its methods
    ("judge.verdicts.bare_answer.nonsense", False),  # a function: no attribute of it is cited
])
def test_the_code_name_check_finds_what_is_there_and_only_that(dotted, resolves):
    assert (unresolved_code_name(dotted) is None) is resolves, unresolved_code_name(dotted)


def _block_commands(page: Path) -> Iterator[tuple[int, int, str]]:
    """(block number, line, command) of each line of a page's code blocks, ``\\``-continued lines joined."""
    block, in_block, command, start = 0, False, "", 0
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block, block = not in_block, block + (not in_block)
            continue
        if not in_block:
            continue
        command, start = (command + " " + line.rstrip().removesuffix("\\"), start) if command else \
            (line.rstrip().removesuffix("\\"), number)
        if not line.rstrip().endswith("\\"):
            yield block, start, command
            command = ""


def _shell_words(command: str) -> list[str]:
    """A block command's shell words, comments dropped and URLs whole (``_words`` splits them at ':')."""
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def unguarded_after_background_serve(page: Path) -> list[str]:
    """Each console-script command that runs, in the block of a `judge-serve ... &` (its pid in `$serve`), after
    that line without `kill -0 $serve &&` before it, unless it names a URL of another host only: if judge-serve
    exited (its port in use, a wrong `--model`), the `until` loop stops waiting and such a command reaches whatever
    else answers on the port, another judge-serve with other weights under the same name among them."""
    wrong, serving = [], None
    for block, line, command in _block_commands(page):
        words = _shell_words(command)
        if serving != block:
            serving = None
        if words and words[0] == "judge-serve" and "&" in words:
            serving = block
            continue
        if serving is None:
            continue
        if words[:3] == ["kill", "-0", "$serve"] and "&&" in words:
            continue  # guarded
        rest = list(words)
        while rest and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", rest[0]):
            rest = rest[1:]  # MY_KEY=... judge-eval ...
        if not rest or rest[0] not in CONSOLE_SCRIPTS:
            continue
        urls = [w for w in rest if re.match(r"https?://", w)]
        if urls and not any(re.match(r"https?://(127\.0\.0\.1|localhost|\[::1\])[:/]", u) for u in urls):
            continue  # another host's server: judge-serve's exit does not change who answers there
        name = page.relative_to(REPO) if page.is_relative_to(REPO) else page.name
        wrong.append(f"{name}:{line}: {' '.join(words)}")
    return wrong


def test_every_command_after_a_background_judge_serve_is_guarded_by_its_pid():
    """On every page (the first pages' `judge-eval run` lines are also checked in tests/unit/test_first_hour_docs.py),
    a console script run after `judge-serve ... & serve=$!` in the same block runs only while that judge-serve is
    alive: docs/security.md's `judge-eval mera rutie` and docs/reasoning-judges.md's full `judge-train data traces`
    runs (their teacher `configs/data/traces.yaml`'s 127.0.0.1:8000) were left unguarded beside guarded lines."""
    wrong = [problem for page in PAGES for problem in unguarded_after_background_serve(page)]
    assert not wrong, "commands after a background judge-serve without `kill -0 $serve &&`:\n" + "\n".join(wrong)


def test_the_background_serve_guard_check_finds_an_unguarded_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\njudge-serve --model M & serve=$!\nuntil python -c ...; do sleep 5; done\n"
                    "kill -0 $serve && judge-eval run --judge http://127.0.0.1:8000/v1 --out a\n"
                    "judge-train data traces --config c.yaml \\\n    --out b\n"
                    "K=1 judge-eval mera rutie --endpoint http://localhost:8000/v1\n"
                    "judge-eval run --judge https://other.example/v1 ...\n```\n\n"
                    "```bash\njudge-eval run --judge http://127.0.0.1:8000/v1\n```\n", encoding="utf-8")
    wrong = [w.split(": ", 1)[1] for w in unguarded_after_background_serve(page)]
    assert wrong == ["judge-train data traces --config c.yaml --out b",
                     "K=1 judge-eval mera rutie --endpoint http://localhost:8000/v1"], wrong


def test_the_ranking_pages_cpu_candidate_answers_fit_the_tiny_judges_window():
    """docs/ranking.md's CPU ranking (the quickstart's judge under configs/eval/tiny-cpu.yaml, a tiny candidate)
    states a candidate `--max-tokens` whose answers fit the tiny judge's prompt room (its serve config's
    `max_model_len` less the verdict's `max_tokens`) with half of it to spare for the instruction and rubric: as the
    page stood, the candidate's default (4096, lowered to 1024 by its 2048-token window) filled that room and every
    verdict failed as `context_length_exceeded`."""
    import yaml

    from eval.judging.config import RunConfig

    serve = yaml.safe_load((REPO / "configs" / "serve" / "tiny-cpu.yaml").read_text(encoding="utf-8"))
    room = serve["max_model_len"] - serve.get("max_tokens", RunConfig.max_tokens)
    text = " ".join((REPO / "docs" / "ranking.md").read_text(encoding="utf-8").split())
    start = text.index("No sample of these rows is bundled")
    paragraph = text[start:text.index("`--split NAME`", start)]
    stated = re.search(r"`--max-tokens (\d+)`", paragraph)
    assert stated, paragraph
    assert int(stated.group(1)) <= room // 2, (stated.group(1), room)


#: The flags by which a console script writes its output folder.
#: The flags by which a console script names where it writes: judge-eval's and judge-serve's ``--out``, the
#: synthetic stages' ``--output`` (train/synthetic/cli.py), judge-train's ``--output-dir`` or its underscore spelling
#: ``--output_dir`` (train/config.py); with none of them, a ``--config``'s ``output_dir``.
OUTPUT_FLAGS = ("--out", "--output", "--output-dir", "--output_dir", "--out-dir")


def _block_lines() -> list[tuple[str, str]]:
    """(page:line, command) of every code-block command on every page."""
    return [(_where(page, line), command) for page in PAGES for _, line, command in _block_commands(page)]


def writes_into_the_package(commands: list[tuple[str, str]]) -> list[str]:
    """Each of the (page:line, command) ``commands`` whose output flag names a folder inside one of the repository's
    Python packages (a top-level folder with ``__init__.py``: judge, train, serve, eval, tests): run verbatim, it
    rewrites tracked files and leaves a reader's clone modified. Code blocks only: prose may name such a command for
    a maintainer's purpose."""
    import yaml

    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()}
    wrong = []
    for where, command in commands:
        words = _shell_words(command)
        outs = _flag_values(words, OUTPUT_FLAGS)
        for config in _flag_values(words, ("--config",)) if not outs else ():
            if (REPO / config).is_file():
                outs.append(str((yaml.safe_load((REPO / config).read_text(encoding="utf-8")) or {}).get(
                    "output_dir", "")))
        if any((parts := Path(out).parts) and parts[0] in packages for out in outs):  # "./train/x": train, x
            wrong.append(f"{where}: {' '.join(words)}")
    return wrong


def test_no_documented_command_writes_into_the_package():
    """A command a page gives to run writes into runs/ or a folder the reader names, never into the package's own
    files: docs/criteria-auto.md's rebuild of the shipped classifier (`--out judge/data/criteria_tfidf`) rewrote the
    tracked files, which differ from the committed build in float noise (another machine's BLAS sums in another
    order), leaving a new user's clone modified."""
    assert not (wrong := writes_into_the_package(_block_lines())), \
        "commands that write into the package's tracked files:\n" + "\n".join(wrong)


@pytest.mark.parametrize(("command", "into"), [
    ("judge-train criteria-classifier --out judge/data/criteria_tfidf   # the shipped one", True),
    ("judge-train criteria-classifier --out=./train/x", True),
    ("judge-train run --config c.yaml --output-dir serve/x", True),
    ("judge-train data traces --input x --output judge/data/t", True),  # the synthetic stages' flag
    ("judge-train run --config c.yaml --output_dir train/x", True),  # judge-train's underscore spelling
    ("judge-train data traces --input x --output runs/data/traces", False),
    ("judge-train criteria-classifier --out runs/task-clf", False),
    ("judge-eval run --judge runs/tiny-seq2seq/export --out runs/eval/tiny   # judge/ read, not written", False),
])  # fmt: skip
def test_the_package_write_check_finds_an_output_into_a_package(command, into):
    assert bool(writes_into_the_package([("a.md:1", command)])) is into


def test_the_package_write_check_reads_a_config_s_output_dir(tmp_path):
    """A training line with no output flag writes where its ``--config``'s ``output_dir`` says."""
    config = tmp_path / "c.yaml"
    config.write_text("output_dir: judge/x\n", encoding="utf-8")
    assert writes_into_the_package([("a.md:1", f"judge-train --config {config}")])
    assert not writes_into_the_package([("a.md:1", f"judge-train --config {config} --output-dir runs/y")])
    config.write_text("output_dir: runs/x\n", encoding="utf-8")
    assert not writes_into_the_package([("a.md:1", f"judge-train --config {config}")])


#: The flags by which a console script reads a file or folder an earlier command wrote.
INPUT_FLAGS = ("--data", "--input", "--judge", "--model", "--predictions", "--export", "--run")


def _cpu_lines() -> list[tuple[str, list[str], str]]:
    """(where, words, comment) of every code-block command whose trailing comment labels it ``CPU``."""
    found = []
    for page in PAGES:
        for _, line, command in _block_commands(page):
            comment = command.partition("  #")[2]
            if re.search(r"\bCPU\b", comment):
                found.append((_where(page, line), _shell_words(command), comment))
    return found


def _flag_values(words: list[str], flags: tuple[str, ...]) -> list[str]:
    values = []
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag in flags:
            values.append(value if eq else words[i + 1] if i + 1 < len(words) else "")
    return values


def cpu_lines_reading_what_no_cpu_line_writes(lines: list[tuple[str, list[str], str]]) -> list[str]:
    """Each CPU-labelled line that reads a ``runs/`` path no CPU-labelled line writes (by ``--out``, ``--output``,
    ``--output-dir``, or its ``--config``'s ``output_dir``), unless its comment says it is ``given`` that file: run
    on a CPU it has nothing to read, its input coming from a GPU-served stage."""
    import yaml

    written = []
    for _, words, _ in lines:
        outs = _flag_values(words, ("--out", "--output", "--output-dir"))
        for config in _flag_values(words, ("--config",)) if not outs else ():
            if (REPO / config).is_file():
                outs.append(str((yaml.safe_load((REPO / config).read_text(encoding="utf-8")) or {}).get(
                    "output_dir", "")))
        written += [o.rstrip("/") for o in outs if o]
    wrong = []
    for where, words, comment in lines:
        for value in _flag_values(words, INPUT_FLAGS):
            if value.startswith("runs/") and not re.search(r"\bgiven\b", comment) and not any(
                    value == w or value.startswith(w + "/") for w in written):
                wrong.append(f"{where}: reads {value}")
    return wrong


def test_every_line_labelled_cpu_reads_what_a_cpu_line_writes():
    """A command a page labels CPU runs on a CPU from what the pages' CPU lines write: docs/reasoning-judges.md's tiny
    integer SFT read runs/data/traces/traces.jsonl, which only the traces stage writes, its teacher
    Pollux-4B-Judge served on a GPU (no traces file is bundled); the line now says it is given that file."""
    wrong = cpu_lines_reading_what_no_cpu_line_writes(_cpu_lines())
    assert not wrong, "CPU lines whose input no CPU line writes:\n" + "\n".join(wrong)


def test_the_cpu_input_check_finds_an_input_only_a_gpu_stage_writes():
    lines = [("a.md:1", ["judge-train", "--config", "configs/train/tiny/seq2seq.yaml"], " CPU"),
             ("a.md:2", ["judge-eval", "run", "--judge", "runs/tiny-seq2seq/export", "--out", "runs/eval/x"], " CPU"),
             ("a.md:3", ["judge-eval", "score", "--predictions=runs/eval/x"], " CPU"),
             ("a.md:4", ["judge-train", "--data", "runs/data/traces/traces.jsonl"], " CPU"),
             ("a.md:5", ["judge-train", "--data", "runs/data/traces/traces.jsonl"], " CPU, given traces.jsonl")]
    assert cpu_lines_reading_what_no_cpu_line_writes(lines) == ["a.md:4: reads runs/data/traces/traces.jsonl"]
