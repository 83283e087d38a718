"""The config layer every job shares: dataclass fields with help text, their flags, and one resolution order.

A job's settings are one dataclass (``train.config``, ``serve.config``, ``eval.judging.config.RunConfig``,
``eval.mera.config``, ``train.synthetic.config``) whose fields are declared with ``option`` (default + help).
From it come the YAML keys and the command-line flags, resolved in one order by ``resolve_config``:

    dataclass defaults  ->  the YAML file (``--config FILE``)  ->  the flags given on the command line

A YAML key or flag the dataclass does not have is an error naming it (a misspelt ``learning_rat`` must not
silently train with the default), and so is a key given twice in one mapping; an empty file (or one of comments
only) sets nothing, every field its default. Values from either source are checked against the field's type (and
its ``choices``) with an error naming the field and where it came from.

One flag style (``add_config_flags``): ``--output-dir`` for field ``output_dir``; the field's own spelling
(``--output_dir``, the YAML key) is a hidden alias, kept because older commands and scripts use it. A boolean is
``--resume`` / ``--no-resume``, and ``--resume true|false`` also works. A list is a JSON list or shell words
(``--engine-args '--seed 0'``), or space-separated values where the field says ``nargs``; a dict is JSON.

This module also holds the one reader of the JSON objects stages hand each other (a checkpoint's
``config.json``, the export manifest, ``run.json``).

Why one module of ~990 lines: reading a config (the YAML file, bounded before any value is built), checking each
value against its field and resolving the layers are one path that every job's settings take, with one error type
naming the field and its source; its parts are not used apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import shlex
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judge.plumbing.json_reading import JSON_REFUSALS, lone_surrogate_at, shown_value, unreadable_json, value_words

__all__ = [
    "ConfigError",
    "lone_surrogate_problem",
    "special_file_kind",
    "yaml_truth_value_in_text",
    "ExactArgumentParser",
    "option",
    "field_types",
    "coerce",
    "suggest_keys",
    "closest_option",
    "unknown_command",
    "add_config_flags",
    "given_flags",
    "chosen_fields",
    "resolve_config",
    "config_flag",
    "read_config_file",
    "read_json_object",
    "refuse_control_characters",
]


class ConfigError(ValueError):
    """A configuration that cannot run: a missing file, an unknown key, a wrong type or an impossible value."""


#: The most lines of usage an argparse error keeps above its message (``ExactArgumentParser.error``).
_SHORT_USAGE_LINES = 4


class ExactArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` that takes long options only as spelt in full (``allow_abbrev=False``).

    With abbreviations on, ``judge-eval run --api-key SECRET`` was read as ``--api-key-env SECRET`` (a secret taken for the name of a variable),
    and any new option can silently change what an old abbreviation means. Subcommand parsers made by
    ``add_subparsers`` are of the same class, so every parser of a console script takes options in full.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        """As argparse's, after spelling ``--some_flag`` as ``--some-flag`` where only the dashed form is an option
        here: one convention for every command, whichever spelling a script or a habit uses. Arguments after a
        bare ``--`` (passed through to another program) are left as given."""
        import sys

        self._given = self._dashed(list(sys.argv[1:] if args is None else args))
        parsed = super().parse_known_args(self._given, namespace)
        self._namespace = parsed[0]  # which subcommand ran, for error(): parse_args reports leftovers after this
        self._leftover = list(parsed[1])  # the leftovers as given: argparse's message joins them with spaces
        return parsed

    def _dashed(self, args: list[str]) -> list[str]:
        known = self._option_string_actions
        out: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                return out + args[i:]
            if arg.startswith("--") and "_" in arg:
                flag, eq, value = arg.partition("=")
                dashed = flag.replace("_", "-")
                if flag not in known and dashed in known:
                    arg = dashed + eq + value
            out.append(arg)
        return out

    def error(self, message: str) -> typing.NoReturn:
        """As argparse's, except for unrecognized options: one line with the closest option of the command that was
        run, not a usage of forty lines above ``unrecognized arguments`` (a mistyped ``--dat`` for ``--data``); a
        required option missing, one line naming it, whatever the usage's length (the line names what is missing:
        ``judge-eval score`` said it in one line, ``judge-eval experts`` under its usage), and beside an option not
        recognized, both, the unrecognized first (``--prediction`` for ``--predictions``: argparse said only that
        ``--predictions`` is required, never naming the word it could not read); and any other error of a command
        whose usage runs past ``_SHORT_USAGE_LINES`` lines is one line too (a bad ``--learning-rate abc`` printed 38
        lines of judge-train's usage above it), naming ``--help``."""
        import sys

        if left_out := self._command_misspelt() or self._command_left_out():
            print(f"{self.prog}: error: {left_out}", file=sys.stderr)
            sys.exit(2)
        prefix = "unrecognized arguments: "
        command = self._command_run()
        required = message.startswith("the following arguments are required: ")
        if required and (unread := self._unrecognized_options()):
            print(f"{command.prog}: error: {prefix}{self._with_closest(unread, command)}; {message}; "
                  f"`{command.prog} --help` lists the options", file=sys.stderr)
            sys.exit(2)
        if not message.startswith(prefix):
            if not required and self.format_usage().count("\n") <= _SHORT_USAGE_LINES:
                super().error(message)
            print(f"{self.prog}: error: {message}; `{self.prog} --help` lists the options", file=sys.stderr)
            sys.exit(2)
        leftover = getattr(self, "_leftover", [])
        # each word as given: a value with a space (`--x='["a", "b"]'`) is one word, its hint after the whole of it
        words = leftover if " ".join(leftover) == message[len(prefix):] else message[len(prefix):].split(" ")
        print(f"{command.prog}: error: {prefix}{self._with_closest(words, command)}; "
              f"`{command.prog} --help` lists the options", file=sys.stderr)
        sys.exit(2)

    def _subcommand_action(self) -> argparse._SubParsersAction | None:
        """This parser's subcommands' action (its ``choices`` hold every name, aliases too); None if it has none."""
        return next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)

    def _commands(self) -> dict[str, argparse.ArgumentParser]:
        """This parser's subcommands by name, an alias left out (it comes after its command's name); {} if none."""
        subs = self._subcommand_action()
        commands: dict[int, tuple[str, argparse.ArgumentParser]] = {}
        for name, parser in (subs.choices.items() if subs else ()):
            commands.setdefault(id(parser), (name, parser))
        return dict(commands.values())

    def _command_misspelt(self) -> str:
        """The error of a command line whose first word after this parser's own options is no subcommand
        (``judge-eval scor --predictions X``): that word, the closest command and the list, in one line, where
        argparse printed its usage above "invalid choice"; a stage or task where the subparsers' ``dest`` says so. ""
        otherwise."""
        commands = self._commands()
        subs = self._subcommand_action()
        # the subcommands' dest names them (a stage of judge-train data, a task of judge-eval mera); argparse's
        # default dest is SUPPRESS, which names nothing
        noun = subs.dest if subs and subs.dest != argparse.SUPPRESS else "command"
        given, i = getattr(self, "_given", []), 0
        while i < len(given) and given[i].partition("=")[0] in self._option_string_actions:
            action = self._option_string_actions[given[i].partition("=")[0]]
            i += 1 + (action.nargs != 0 and "=" not in given[i])  # an option of this parser, and its value
        if not commands or i >= len(given) or given[i].startswith("-") or given[i] in subs.choices:
            return ""
        return unknown_command(self.prog, given[i], commands, noun)

    def _command_left_out(self) -> str:
        """The error of a command line that names no subcommand and begins with an option of one (``judge-eval
        --judge X --out Y``, as judge-train takes ``run`` for granted): argparse read the option's value as the
        subcommand ("invalid choice: 'X'") or suggested the closest option of the top parser. "" otherwise."""
        subs = self._subcommand_action()
        given = getattr(self, "_given", [])
        if subs is None or any(word in subs.choices for word in given):
            return ""
        first = next((word for word in given if word.startswith("--")
                      and word.partition("=")[0] not in self._option_string_actions), "")
        flag = first.partition("=")[0]
        commands = self._commands()
        owners = [parser for parser in commands.values() if flag and flag in parser._option_string_actions]
        if not owners:
            return ""
        return (f"no command before {first}: `{owners[0].prog} {first} ...` ({flag} is an option of "
                f"{', '.join(f'`{parser.prog}`' for parser in owners)}); the commands: "
                f"{', '.join(commands)}; `{self.prog} --help` lists them")

    def _unrecognized_options(self) -> list[str]:
        """The long options given to this parser (before a bare ``--``) that are none of its own, as given; a word
        with a space before any ``=`` is a value to argparse (``--server-args "--max-num-seqs 8"``), not an option."""
        unread = []
        for word in getattr(self, "_given", []):
            if word == "--":
                break
            flag = word.partition("=")[0]
            if word.startswith("--") and " " not in flag and flag not in self._option_string_actions:
                unread.append(word)
        return unread

    def _with_closest(self, words: list[str], command: argparse.ArgumentParser | None = None) -> str:
        """``words`` as an error names them, each unrecognized option with the closest option of ``command`` (this
        parser by default), or said to be ``command``'s when given before its subcommand."""
        command = command or self
        options = [s for parser in {self, command} for s in parser._option_string_actions if s.startswith("--")]
        said, passed_on = [], False
        for word in words:
            passed_on = passed_on or word == "--"  # after a bare --: another program's, no option of ours
            flag = word.partition("=")[0]
            if passed_on or not word.startswith("--"):
                said.append(word)
            elif flag in options:  # an option of the subcommand, given before it
                said.append(f"{word} (an option of `{command.prog}`: give it after its subcommand)")
            else:
                close = closest_option(flag, options)
                said.append(f"{word} (did you mean {close}?)" if close else word)
        return " ".join(said)

    def _command_run(self) -> argparse.ArgumentParser:
        """The parser of the subcommand the command line named, else this one: argparse reports a subcommand's
        unrecognized options from the top parser, which alone does not know them."""
        given = getattr(self, "_given", [])
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = getattr(getattr(self, "_namespace", None), action.dest, None) if action.dest else None
                if chosen in action.choices:  # what argparse read, not a word that may be an option's value
                    sub = action.choices[chosen]
                    return sub._command_run() if isinstance(sub, ExactArgumentParser) else sub
                named = [name for name in action.choices if name in given]
                if named:
                    sub = action.choices[min(named, key=given.index)]
                    return sub._command_run() if isinstance(sub, ExactArgumentParser) else sub
        return self


def closest_option(flag: str, options: Iterable[str]) -> str:
    """The option a mistyped long ``flag`` most likely meant, "" when none is close; ``options`` as a parser spells
    them, a hidden ``--some_flag`` alias counted once, as its dashed ``--some-flag``. ``--help`` is never named: a
    typo of another option is not a request for the help.

    The first of five rules that names any option decides, the closest of several by ``difflib``'s similarity of
    the names without their leading dashes:

    1. initials: the flag is the first letters of the option's words, two or more words of two or more letters
       each (``--lr`` for ``--learning-rate``, ``--wd`` for ``--weight-decay``; ``--lora-r`` is no long form);
    2. word prefixes: each dash-separated word of the flag begins the option's word in its place, later words
       left off (``--out`` for ``--output-dir``, ``--lr-sched`` for ``--lr-scheduler-type``);
    3. a whole word: a one-word flag that is a whole word of exactly one option (``--epochs`` for
       ``--num-train-epochs``; a word of several options names none of them);
    4. spelling: ``difflib.get_close_matches`` (its default cutoff 0.6) on the names without their dashes, for a
       typo (``--sever-args``): compared with them, the two dashes every name shares lift a short flag to the
       cutoff beside an option of another meaning (``--bs`` beside ``--seed``);
    5. an option and more: the flag's first words are all of an option's (``--seed-value`` for ``--seed``), after
       spelling, which reads ``--lora-rank`` as ``--lora-r``, not ``--lora``.

    A short form is read before a typo: by spelling alone ``--lr`` is nearest ``--lora``, an option of
    another meaning.
    """
    import difflib

    names = sorted({o.replace("_", "-") for o in options if o.startswith("--") and len(o) > 2} - {"--help"})
    typed = flag.replace("_", "-")[2:]
    words = [w for w in typed.split("-") if w]

    def initials(name: str) -> bool:
        parts = name[2:].split("-")
        return "-" not in typed and len(parts) >= 2 and all(len(p) >= 2 for p in parts) and \
            "".join(p[0] for p in parts) == typed

    def word_prefixes(name: str) -> bool:
        parts = name[2:].split("-")
        return bool(words) and len(parts) >= len(words) and all(p.startswith(w) for p, w in zip(parts, words))

    def whole_word(name: str) -> bool:
        return len(words) == 1 and words[0] in name[2:].split("-") and \
            sum(words[0] in other[2:].split("-") for other in others) == 1

    def spelling(name: str) -> bool:
        return name[2:] in spelt

    def and_more(name: str) -> bool:
        parts = name[2:].split("-")
        return len(words) > len(parts) and words[:len(parts)] == parts

    others = [name for name in names if name != flag.replace("_", "-")]
    spelt = difflib.get_close_matches(typed, [name[2:] for name in others], n=1)
    for rule in (initials, word_prefixes, whole_word, spelling, and_more):
        if found := [name for name in others if rule(name)]:
            return max(found, key=lambda name: (difflib.SequenceMatcher(None, typed, name[2:]).ratio(), -len(name)))
    return ""


def unknown_command(prog: str, word: str, names: Iterable[str], noun: str = "command", remedy: str = "") -> str:
    """The refusal of a ``word`` that is none of ``prog``'s subcommands ``names`` (a ``noun`` each: a command, a
    stage, a task), without its ``prog: error:`` lead: the word, the closest name (``remedy`` in its place where
    one is given), every name and the ``--help`` that lists them, as every console script says it."""
    import difflib

    listed = list(names)
    close = difflib.get_close_matches(word, listed, n=1)
    hint = f" ({remedy})" if remedy else f" (did you mean {close[0]}?)" if close else ""
    return f"unknown {noun} {word!r}{hint}; the {noun}s: {', '.join(listed)}; `{prog} --help` lists them"


def special_file_kind(path: str | Path) -> str:
    """What a path that exists but is no regular file or folder is ("a pipe", "a character device", "a block
    device", "a socket"); "" for anything else, a missing path too. For the readers of a user's files to say so:
    "not found" of ``/dev/null`` or a process substitution's pipe sent its user looking for a typo in a path that
    exists."""
    import stat

    try:
        mode = Path(path).stat().st_mode
    except (OSError, ValueError):  # not there, a link to nothing, a name the system cannot take
        return ""
    for test, kind in ((stat.S_ISFIFO, "a pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return ""


def read_config_file(path: str | Path, fields_of: type | None = None) -> dict[str, Any]:
    """Read a YAML config file into a dict of the keys it sets.

    Args:
        path: the YAML file.
        fields_of: a dataclass; when given, keys that are not its fields are refused.

    Returns:
        The mapping, to merge over the dataclass defaults. With ``fields_of``, a text field (``str``, ``str | None``)
        set to an unquoted YAML number holds the text written (``0755``, ``1.10``), not the number YAML 1.1 reads; so
        does each such item of a list of text (``list[str]``), and a field set through a ``<<:`` merge.

    Raises:
        ConfigError: the file is missing (or a pipe, a device: ``special_file_kind``), not YAML or not a mapping
            (an empty file is the empty mapping), gives a key twice in one mapping (named, with both lines), or sets
            unknown keys (named, with the known ones).
    """
    import yaml

    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder, not a YAML file (give the .yaml file in it)")
    if kind := special_file_kind(path):
        raise ConfigError(f"config file {path}: {kind}, not a regular file; give the YAML file (write a stream to a "
                          "file first)")
    if not path.is_file():
        raise ConfigError(f"config file {path} not found{_from_the_repository_root(path)}")
    written: dict[str, Any] = {}
    try:
        raw = _bounded_yaml(path.read_text(encoding="utf-8"), path, written)
    except yaml.YAMLError as err:  # the parser's own words carry the line and column
        said = " ".join(str(err).replace('in "<unicode string>", ', "").split())
        raise ConfigError(f"{path}: not valid YAML: {said}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except ConfigError:
        raise
    except ValueError as err:  # PyYAML's constructors: an integer past 4,300 digits, a date like 2024-13-45
        # (the advice after ';' is sys.set_int_max_str_digits, for programmers)
        raise ConfigError(f"{path}: a value YAML cannot read: {str(err).split(';')[0]}") from None
    except RecursionError:  # PyYAML composes and constructs recursively: ~300 levels of [[[...]]] run out of stack
        raise ConfigError(f"{path}: nested too deeply to read (a config value nests at most "
                          f"{MAX_CONFIG_DEPTH} levels)") from None
    if raw is None:  # nothing but comments: every field its default (a command that needs a field says which)
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of field: value, got {_kind(raw)}")
    if fields_of is not None:
        known = {f.name for f in dataclasses.fields(fields_of)}
        unknown = sorted(set(raw) - known, key=str)  # YAML keys may be numbers: `1: a` beside `foo: b`
        if unknown:
            raise ConfigError(f"{path}: unknown keys {unknown} for {fields_of.__name__}; "
                              f"{suggest_keys(unknown, known)}")
        types_of = {name: _base_type(tp)[0] for name, tp in field_types(fields_of).items()}
        for key, text in written.items():
            if key not in raw:
                continue
            if types_of.get(key) is str and isinstance(text, str):
                raw[key] = text
            elif (types_of.get(key) == list[str] and isinstance(text, list) and isinstance(raw[key], list)
                  and len(raw[key]) == len(text)):
                raw[key] = [value if item is None else item for value, item in zip(raw[key], text)]
    return raw


#: At most this many YAML nodes in a config file, each alias (``*name``) counted as the whole value it repeats. Ten
#: lines of ``&x [*y, ...]`` (1 KB) repeat a value 10^9 times: PyYAML shares the one object, but the config's
#: ``dataclasses.asdict`` and ``copy.deepcopy`` copy every repeat, for hours. The largest shipped config
#: (configs/train/qwen3-8b/grpo.yaml) has 81 nodes, so the cap leaves a margin of over a hundred times.
MAX_CONFIG_NODES = 10_000
#: At most this many levels of lists and mappings in a config value (a YAML value, or the JSON of ``--extra-body``).
#: A shipped config nests four; ``json.loads`` reads ~1,000 levels, which ``dataclasses.asdict`` then cannot copy
#: (RecursionError), so the bound comes before any work.
MAX_CONFIG_DEPTH = 64


def _from_the_repository_root(path: Path) -> str:
    """For a relative config path missing here but present in the repository this code runs from (a shipped config
    named from another folder, as the docs name them from the root): where it is and where to run. "" otherwise,
    and for an installed package, which has no configs/ beside it."""
    root = Path(__file__).resolve().parents[2]
    if path.is_absolute() or not (root / path).is_file():
        return ""
    try:
        here = Path.cwd()
    except FileNotFoundError:  # a shell left in a folder removed since: nowhere to read a relative path from
        here = None
    if here is not None and here.resolve() == root:
        return ""
    return (f" in {here or 'a folder that no longer exists'}; the repository's is {root / path}: run from {root}, "
            "where the docs' relative paths start")


#: The tags PyYAML (YAML 1.1) gives an unquoted scalar it reads as a number.
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _is_written_number(node: Any) -> bool:
    """Whether a composed YAML node is an unquoted scalar that YAML 1.1 reads as a number."""
    import yaml

    return isinstance(node, yaml.ScalarNode) and node.style is None and node.tag in _NUMBER_TAGS


def _bounded_yaml(text: str, path: Path, written: dict[str, Any] | None = None) -> Any:
    """``yaml.safe_load`` of ``text`` that counts the composed nodes, aliases expanded, before building any value,
    and refuses a key given twice in one mapping.

    ``written``, when given, is filled with the text as written of each top-level value that YAML reads as a number
    (``0755``: octal 493; ``1.10``: 1.1; ``10:30``: sexagesimal 630; ``2024_01_05``: 20240105), keyed by its key,
    a key merged in by ``<<:`` included; for a top-level list holding such items, the list of each item's text (None
    for the other items): a text field, or a list of text, takes that text, not the number's digits
    (``read_config_file``).

    Raises:
        ConfigError: past ``MAX_CONFIG_NODES`` or ``MAX_CONFIG_DEPTH``, an alias inside the value it names, or a key
            given twice.
        yaml.YAMLError: not YAML.
    """
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_node_count(node, path)
        _refuse_repeated_keys(node, path)
        if written is not None and isinstance(node, yaml.MappingNode):
            # The keys a `<<:` merge brings in are in the node only once merged: PyYAML's own step, which the
            # construction below repeats as a no-op. The merged pairs come first, so a key also given beside the
            # merge takes its own value, as the constructed mapping does.
            loader.flatten_mapping(node)
            values = {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}
            for key, value in values.items():
                if _is_written_number(value):
                    written[key] = value.value
                elif isinstance(value, yaml.SequenceNode):
                    items = [item.value if _is_written_number(item) else None for item in value.value]
                    if any(item is not None for item in items):
                        written[key] = items
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _refuse_repeated_keys(root: Any, path: Path) -> None:
    """Refuse a key given twice in one mapping of the composed document: PyYAML keeps the last value without a word,
    so `learning_rate: 1e-5` appended under a config's own `learning_rate` changed the run unseen.

    Checked on the composed nodes, before anything is constructed: constructing a merge (``<<: *base``) rewrites the
    merged mapping's node in place with the keys it takes in, which a later alias of that node would then show as
    given twice. A merge key is not checked (overriding a merged key is what merging is for); keys are compared as
    written scalars (their tag and text: ``port`` and ``'port'`` are one key). Each node is checked once, however
    many aliases name it.

    Raises:
        ConfigError: naming the key and both lines.
    """
    import yaml

    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                stack.extend((key_node, value_node))
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key, line = (key_node.tag, key_node.value), key_node.start_mark.line + 1
                if key in lines:
                    raise ConfigError(f"{path}: key {key_node.value!r} given twice (lines {lines[key]} and {line}); "
                                      "keep one")
                lines[key] = line
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _check_node_count(root: Any, path: Path) -> None:
    """Refuse a composed YAML document whose expansion passes the bounds.

    Aliases are the same node object in PyYAML's graph, so each node's expanded size and height (its deepest path
    below it) are computed once (memoised by identity), and every later reference is checked with them at its own
    depth: the walk is linear in the file, however many times a value is repeated, and a value first met shallowly
    still counts where an alias repeats it deeper. Iterative, so a deep file cannot run it out of stack.
    """
    import yaml

    def children(node: Any) -> list[Any]:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        return []

    def too_deep(node: Any, how: str = "") -> ConfigError:
        return ConfigError(f"{path}: nested more than {MAX_CONFIG_DEPTH} levels deep{how}, line "
                           f"{node.start_mark.line + 1}")

    memo: dict[int, tuple[int, int]] = {}  # id -> (size with aliases expanded, height: levels below the node)
    open_nodes: set[int] = set()  # the nodes on the path from the root to the one being walked
    stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            below = [memo[id(child)] for child in children(node)]
            memo[key] = (1 + sum(size for size, _ in below), 1 + max((height for _, height in below), default=-1))
            if memo[key][0] > MAX_CONFIG_NODES:
                raise ConfigError(f"{path}: more than {MAX_CONFIG_NODES:,} YAML values once its aliases (*name) are "
                                  f"expanded; a config file has a few hundred at most")
            continue
        # the file's own mapping is one level above its values, hence the + 1
        if key in memo:  # a value met before, repeated here by an alias: its deepest level counts from this depth
            if depth + memo[key][1] > MAX_CONFIG_DEPTH + 1:
                raise too_deep(node, f" once its aliases (*name) are expanded ({depth + memo[key][1] - 1} levels)")
            continue
        if key in open_nodes:
            raise ConfigError(f"{path}: an alias (*name) inside the value it names, line {node.start_mark.line + 1}: "
                              "the value would never end")
        if depth > MAX_CONFIG_DEPTH + 1:
            raise too_deep(node)
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in children(node))


def suggest_keys(unknown: Sequence[str], known: set[str]) -> str:
    """"did you mean" for each misspelt key that is close to a known one (``difflib``'s similarity, its default
    cutoff 0.6); the whole list of known keys only when no key has a close match (a list of ~50 keys hides the
    one that was meant)."""
    import difflib

    guesses = {key: difflib.get_close_matches(str(key).replace("-", "_"), sorted(known), n=1) for key in unknown}
    if not any(guesses.values()):
        return f"known: {sorted(known)}"
    return "; ".join(f"{key!r}: did you mean {match[0]!r}?" if match else f"{key!r}: no close key"
                     for key, match in guesses.items())


def read_json_object(path: str | Path, missing_ok: bool = False) -> dict[str, Any]:
    """A JSON file holding one object (``config.json``, ``pollux_judge.json``, ``run.json``, ``metrics.json``).

    Args:
        path: the file.
        missing_ok: a missing file reads as ``{}`` instead of an error.

    Raises:
        ValueError: the file is missing (unless ``missing_ok``), not valid JSON, or not an object, naming the file.
    """
    import json

    path = Path(path)
    if not path.is_file():
        if missing_ok:
            return {}
        raise ValueError(f"{path}: not found")
    try:
        text = path.read_text(encoding="utf-8")
        value = json.loads(text)
    except UnicodeDecodeError as err:  # a ValueError too, which unreadable_json would call a number too long
        raise ValueError(f"{path}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    except JSON_REFUSALS as err:  # valid JSON json.loads cannot hold
        raise ValueError(f"{path}: {unreadable_json(err)}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object")
    if problem := lone_surrogate_problem(text, value):
        # Refused here, not where the object is written again (run.json into a merge, a judge's name into
        # metrics.json and the report), which failed after the work with "'utf-8' codec can't encode", no file named.
        raise ValueError(f"{path}: {problem}; mend the file or write it again")
    return value


def lone_surrogate_problem(text: str, value: Any) -> str | None:
    """What is wrong with ``value``, the JSON ``text`` decoded, when a string or key in it holds a lone surrogate
    (``"\\ud800"``: an escape no UTF-8 writer takes): the dotted key and the code point; else None. The text is
    searched for an escape first, so a file without one costs one regex scan."""
    if not _SURROGATE_ESCAPE.search(text) or not (where := _lone_surrogate(value)):
        return None
    return (f"{where[0] or 'a key'} holds a lone surrogate (U+{where[1]:04X}: a JSON \\u escape with no pair), "
            "which is no Unicode text")


#: A help text that states its own default ("(default: a fresh temporary folder)", "defaults to the output folder's
#: name") gets no generic "(default: ...)" suffix: --help would print a second default, the field's bare value. Only
#: those forms: "(default" with no colon may be another thing's default ("the recipe's (default the same ...)").
_STATES_ITS_DEFAULT = re.compile(r"\(default:|\bdefaults to\b")

#: A JSON escape of a UTF-16 surrogate: the only way a lone one gets into a file read as UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _lone_surrogate(value: Any, where: str = "") -> tuple[str, int] | None:
    """The dotted key of the first string (or key) in ``value`` holding a lone surrogate, and that code point."""
    if isinstance(value, str):
        at = lone_surrogate_at(value)
        return None if at is None else (where, ord(value[at]))
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        inner = f"{where}.{key}" if where else str(key)
        found = _lone_surrogate(key, inner) if isinstance(key, str) else None
        if found or (found := _lone_surrogate(item, inner)):
            return found
    return None


def refuse_control_characters(setting: str, value: Any) -> None:
    """Refuse a value holding a control character (a newline above all) before it reaches a script or a file name.

    A newline in a value rendered into a shell script (an ``#SBATCH`` header, a comment, a path) starts a new
    command line there; tabs, NULs, escape sequences and the Unicode line separators are refused with it.

    Args:
        setting: how the error names the value (``--partition``, ``model_name_or_path in FILE``).
        value: the value; anything not text is read as its ``str``.

    Raises:
        ConfigError: naming ``setting``, the character and where it stands.
    """
    import unicodedata

    text = str(value)
    for i, char in enumerate(text):
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise ConfigError(f"{setting}: control character {char!r} at position {i} of {text!r}; a value that "
                              "reaches a script or a file name may not hold one")


# ---------------------------------------------------------------------------------------------------------------
# Fields
# ---------------------------------------------------------------------------------------------------------------


def option(default: Any, help: str, *, choices: Sequence[Any] | None = None, nargs: str | None = None,
           **kwargs: Any) -> Any:  # noqa: A002 - argparse's word
    """A dataclass field with its help text (the flag's help and the YAML key's documentation).

    Args:
        default: the default; a list or dict is copied for every instance.
        help: one or two sentences: what the value does, with units.
        choices: the allowed values, checked for YAML values and flags alike.
        nargs: for a list field, ``"+"`` takes space-separated flag values (``--k 1 5 10``).
        kwargs: passed to ``dataclasses.field``.
    """
    metadata = {"help": help, **({"choices": tuple(choices)} if choices is not None else {}),
                **({"nargs": nargs} if nargs is not None else {})}  # fmt: skip
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=metadata, **kwargs)
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


def field_types(cls: type) -> dict[str, Any]:
    """Field name -> resolved annotation (``from __future__ import annotations`` leaves them as strings)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _base_type(tp: Any) -> tuple[Any, bool]:
    """(the non-None type, whether None is allowed) of an annotation like ``int | None``."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def _parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {_got(text)}")


def _kind(value: Any) -> str:
    """What a config value is, in the words of whoever wrote the YAML ("a mapping", "a list", "text", "null",
    "true"), not Python's class ("dict", "str", "NoneType"); a JSON flag (``--extra-body``) is worded the same, one
    wording for one setting whichever way it came."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, str):
        return "text"
    if isinstance(value, datetime.date):  # YAML reads an unquoted 2024-01-01 as a date (a datetime is one too)
        return "a date"
    if isinstance(value, bool):  # YAML 1.1, PyYAML's: an unquoted yes or off is a boolean too
        return f"{value_words(value)} ({YAML_TRUTH_WORDS})"
    # the rest of YAML's tagged kinds: !!binary, !!set, and the items of !!omap and !!pairs
    kinds = ((bytes, "binary data"), ((set, frozenset), "a set"), (tuple, "a key: value pair"))
    return next((words for kind, words in kinds if isinstance(value, kind)), value_words(value))


#: The YAML 1.1 fact behind a truth value nobody meant, said once for both errors that meet it.
YAML_TRUTH_WORDS = "YAML reads an unquoted yes, no, on, off, true or false as true or false"


def yaml_truth_value_in_text(value: bool) -> str:
    """Why a YAML truth value cannot be a text setting's value, and what to write instead.

    PyYAML reads YAML 1.1, where an unquoted yes, no, on, off, true or false is a truth value, and the word written is
    gone once it is read: ``save_strategy: no`` (transformers' own word) reached the trainer as False, and turned back
    into text it would read "false". Refused, with the remedy, rather than guessed.
    """
    return (f"expected text, got {value_words(value)}: {YAML_TRUTH_WORDS}, not as the word written; quote the word "
            "meant ('no', not no)")


def _got(value: Any) -> str:
    """A value as an error shows it: a number or text as written (``shown_value``: past 40 characters cut with a
    mark), anything else by its kind (a list or mapping may be long; null, true and false say themselves)."""
    return shown_value(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else _kind(value)


def _scalar(value: Any, base: Any) -> Any:
    # A YAML list or mapping where a number is meant must be a ValueError like any wrong value: int([1]) is a
    # TypeError, which coerce would let through as a traceback.
    if base is bool:
        if not isinstance(value, (bool, str, int)):
            raise ValueError(f"expected true or false, got {_got(value)}")
        return value if isinstance(value, bool) else _parse_bool(value)
    if base is int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (
                isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"expected an integer, got {_got(value)}")
        try:
            return int(value)
        except ValueError:  # "invalid literal for int() with base 10: '<the whole text>'": Python's words, unbounded
            raise ValueError(f"expected an integer, got {_got(value)}") from None
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"expected a number, got {_got(value)}")
        try:
            return float(value)
        except ValueError:  # "could not convert string to float: '<the whole text>'"
            raise ValueError(f"expected a number, got {_got(value)}") from None
        except OverflowError:  # an integer of 400 digits
            raise ValueError(f"expected a number, got an integer too large for one ({str(value)[:20]}...)") from None
    if base is str:
        if isinstance(value, bool):
            raise ValueError(yaml_truth_value_in_text(value))
        if not isinstance(value, (str, int, float)):
            raise ValueError(f"expected text, got {_kind(value)}")
        return str(value)
    if base is Any:
        return value
    raise ValueError(f"unsupported field type {base}")


def _keyed_scalar(key: Any, value: Any, base: Any) -> Any:
    """``_scalar`` for one value of a mapping, its refusal naming the key."""
    try:
        return _scalar(value, base)
    except ValueError as err:
        raise ValueError(f"{key}: {err}") from None


def _json(text: str) -> Any:
    """``json.loads`` whose refusals (malformed, nested past the recursion limit, an integer past 4,300 digits) are
    ValueErrors in the words of every JSON reader here."""
    try:
        return json.loads(text)
    except JSON_REFUSALS as err:
        raise ValueError(unreadable_json(err)) from None


def _check_depth(value: Any) -> None:
    """Refuse a list or mapping nested past ``MAX_CONFIG_DEPTH`` levels (iteratively: no stack to run out of)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_CONFIG_DEPTH:
            raise ValueError(f"nested more than {MAX_CONFIG_DEPTH} levels deep")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, tuple, dict)))


def coerce(name: str, value: Any, tp: Any, source: str, choices: Sequence[Any] | None = None) -> Any:
    """``value`` (YAML-typed, or text from the command line) as field ``name`` of annotation ``tp``.

    Text ``null``/``none`` is None for an optional field. A list from text is a JSON list or shell words; a dict
    from text is a JSON object.

    Raises:
        ConfigError: naming the field and ``source`` (the YAML file or "command line").
    """
    base, optional = _base_type(tp)
    origin = typing.get_origin(base) or base
    if isinstance(value, str) and value.strip().lower() in ("none", "null") and optional:
        return None
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{source}: {name} may not be null")
    try:
        if origin is list:
            if isinstance(value, str):
                value = _json(value) if value.lstrip().startswith("[") else shlex.split(value)
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"expected a list, got {_kind(value)}")
            _check_depth(value)
            item = (typing.get_args(base) or (Any,))[0]
            result: Any = [_scalar(v, item) for v in value]
        elif origin is dict:
            if isinstance(value, str):
                value = _json(value)
            if not isinstance(value, dict):
                raise ValueError(f"expected a mapping, got {_kind(value)}")
            if (typing.get_args(base) or (Any,))[0] is str and (bad := [k for k in value if not isinstance(k, str)]):
                raise ValueError(f"keys must be text, got {bad[0]!r} ({_kind(bad[0])})")
            _check_depth(value)
            result = dict(value)
            # A mapping of numbers (GRPO's reward weights) reads its values as a scalar field does: PyYAML's text
            # '5e-1' (YAML 1.1 floats need a dot) is the number 0.5, and text that is no number is named by its key.
            value_type = (typing.get_args(base) + (Any, Any))[1]
            if value_type in (bool, int, float):
                result = {key: _keyed_scalar(key, item, value_type) for key, item in result.items()}
        elif base is str and isinstance(value, bool) and choices is not None and str(value).lower() in choices:
            result = str(value).lower()  # `bf16: true` where the field's choices are the words auto, true, false
        else:
            result = _scalar(value, base)
    except ValueError as err:
        raise ConfigError(f"{source}: {name}: {err}") from None
    if choices is not None and result not in choices:
        raise ConfigError(f"{source}: {name}: {result!r} is not one of {', '.join(map(str, choices))}")
    return result


# ---------------------------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------------------------


def config_flag(name: str) -> str:
    """The flag of field ``name``: ``output_dir`` -> ``--output-dir``."""
    return "--" + name.replace("_", "-")


class _BoolFlag(argparse.Action):
    """``--x`` (true) or ``--x true|false``; ``--no-x`` is a second, plain ``store_const`` flag."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs="?", metavar="BOOL", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, True if values is None else _parse_bool(values))
        except ValueError as err:
            parser.error(f"{option_string}: {err}")


def add_config_flags(parser: argparse.ArgumentParser | Any, cls: type, *, names: Sequence[str] | None = None,
                     skip: Sequence[str] = ()) -> None:
    """Add one flag per field of ``cls`` to ``parser`` (or an argument group).

    Absent flags leave nothing in the namespace (``argparse.SUPPRESS``), so only the flags given override the
    YAML (``given_flags``). The help shows the dataclass default.

    Args:
        parser: an ``ArgumentParser`` or argument group.
        cls: the config dataclass.
        names: only these fields (default: all).
        skip: leave these fields out.
    """
    hints = field_types(cls)
    for f in dataclasses.fields(cls):
        if (names is not None and f.name not in names) or f.name in skip:
            continue
        base, _ = _base_type(hints[f.name])
        origin = typing.get_origin(base) or base
        choices = f.metadata.get("choices")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        help_text = f.metadata.get("help", "")
        if origin is list and not f.metadata.get("nargs"):
            help_text += " On the command line: a JSON list, or one quoted string split like a shell would."
        if base is bool:
            help_text += f" --no-{f.name.replace('_', '-')} sets it false."
        if not _STATES_ITS_DEFAULT.search(help_text):
            help_text = f"{help_text} (default: {default!r})"
        help_text = help_text.replace("%", "%%")
        flag, alias = config_flag(f.name), "--" + f.name
        common: dict[str, Any] = {"dest": f.name, "default": argparse.SUPPRESS}
        if base is bool:
            negative = "--no-" + flag[2:]
            parser.add_argument(flag, action=_BoolFlag, help=help_text, **common)
            parser.add_argument(negative, action="store_const", const=False, help=argparse.SUPPRESS, **common)
            if alias != flag:
                parser.add_argument(alias, action=_BoolFlag, help=argparse.SUPPRESS, **common)
            continue

        def convert(text: str, name: str = f.name, tp: Any = hints[f.name], choices: Any = choices,
                    item: bool = False) -> Any:
            try:
                if item:  # one of nargs values: the list's element type
                    return coerce(name, [text], tp, "command line")[0]
                value = coerce(name, text, tp, "command line", choices)
                # `--deepspeed null` stays text: resolve_config reads None as "not given", "null" as null.
                return text if value is None else value
            except ConfigError as err:
                raise argparse.ArgumentTypeError(str(err)) from None

        kwargs = {"type": convert}
        if origin is list and f.metadata.get("nargs"):
            kwargs = {"type": lambda text, convert=convert: convert(text, item=True), "nargs": f.metadata["nargs"],
                      "metavar": (typing.get_args(base) or (str,))[0].__name__.upper()}
        elif choices is not None:
            kwargs["metavar"] = "{" + ",".join(map(str, choices)) + "}"
        else:
            kwargs["metavar"] = "JSON" if origin is dict else "ARGS" if origin is list else base.__name__.upper()
        parser.add_argument(flag, help=help_text, **common, **kwargs)
        if alias != flag:
            parser.add_argument(alias, help=argparse.SUPPRESS, **common, **kwargs)


def given_flags(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of ``cls`` that were given as flags (``add_config_flags`` leaves absent ones out)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in vars(args).items() if k in names}


def chosen_fields(args: argparse.Namespace, cls: type) -> frozenset[str]:
    """The fields of ``cls`` the user chose, as flags or in the ``--config`` YAML: the others may follow what a
    checkpoint needs (a GRPO judge's trained lengths)."""
    from_file = read_config_file(args.config, cls) if getattr(args, "config", None) else {}
    return frozenset(given_flags(args, cls)) | frozenset(from_file)


# ---------------------------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------------------------


def resolve_config(cls: type, path: str | Path | None = None, flags: Mapping[str, Any] | None = None, *,
                   label: str | None = None) -> Any:
    """Defaults, then the YAML file at ``path``, then ``flags``: an instance of ``cls`` (not yet validated).

    Args:
        cls: the config dataclass.
        path: a YAML file, or None for defaults and flags only.
        flags: field -> value from the command line (typed, or text to coerce); a None value means "not given".
        label: how errors name the config (default: the class name).

    Raises:
        ConfigError: a missing or malformed file, an unknown key or flag, or a value of the wrong type or choice.
    """
    hints = field_types(cls)
    meta = {f.name: f.metadata for f in dataclasses.fields(cls)}
    raw = read_config_file(path, cls) if path is not None else {}
    values = {k: coerce(k, v, hints[k], str(path), meta[k].get("choices")) for k, v in raw.items()}
    for key, value in (flags or {}).items():
        if value is None:
            continue
        if key not in hints:
            raise ConfigError(f"{config_flag(key)} does not apply to {label or cls.__name__}")
        values[key] = coerce(key, value, hints[key], "command line", meta[key].get("choices"))
    return cls(**values)
