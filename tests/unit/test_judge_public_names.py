"""The modules of ``judge/`` and ``train/`` use one another through public names only: what the record loaders, the
column-wise reader, the criteria expansion, the process starter, the rewards and the synthetic-data stages share
(the record's field lists and duplicate rule, the supervisor's fork-and-exec setup, the taxonomy's name key, the
dataset-name rule, build-data's tag pattern) is a public name of the module that owns it, listed in its ``__all__``
where it keeps one, so that a reader sees the contract and renaming a private helper of one module cannot break
another. Their comments and docstrings, and
serve/'s, cite no other module's private names either."""

from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.test_ranking_public_names import private_uses

ROOT = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(path for folder in ("judge", "train") for path in (ROOT / folder).rglob("*.py"))
#: Where a comment or docstring may not cite another module's private name: judge/ and train/, and serve/, whose
#: modules cite judge's.
CITING = sorted(path for folder in ("judge", "train", "serve") for path in (ROOT / folder).rglob("*.py"))
#: ``judge.records._shown``: a project module's dotted path, then a name with one leading underscore.
_PRIVATE_CITATION = re.compile(r"\b((?:judge|train|serve|eval)(?:\.[a-z_0-9]+)*)\.(_[A-Za-z]\w*)")


def private_citations(source: str, own: str) -> list[str]:
    """Another module's private names ``source`` cites as ``module._name`` in its text (comments, docstrings); the
    module's own (``own``) and dunders are none."""
    return [f"{module}.{name}" for module, name in _PRIVATE_CITATION.findall(source)
            if module != own and not name.startswith("__")]


def test_private_citations_by_hand():
    """One private name of another module cited; the module's own, a dunder and a public name are none."""
    text = ("# checked whole when read: judge.record_sources._jsonl_table\n"
            '"""as ``judge.verdicts.parse_integer_verdict`` finds them; judge.records._shown, judge.records.__all__"""')
    assert private_citations(text, "judge.records") == ["judge.record_sources._jsonl_table"]


#: The documentation pages, which cite code for its readers: a private name is one a rename may leave dangling.
DOCS = sorted((ROOT / "docs").glob("*.md"))
#: ```eval/judging/backends.py` `_cut_rationale``: a project file, then a name with one leading underscore.
_PRIVATE_FILE_CITATION = re.compile(r"`((?:judge|train|serve|eval)/[\w/]+\.py)`,? `(_[A-Za-z]\w*)")


def docs_private_citations(text: str) -> list[str]:
    """The private names a documentation page cites, as ``module._name`` or as a file then ``_name``."""
    return ([f"{module}.{name}" for module, name in _PRIVATE_CITATION.findall(text) if not name.startswith("__")]
            + [f"{path} {name}" for path, name in _PRIVATE_FILE_CITATION.findall(text)])


def test_docs_private_citations_by_hand():
    text = ("as `eval/judging/backends.py` `_cut_rationale` does; (`eval/scoring/compare.py`, `_SETTINGS`);\n"
            "`judge.verdicts._reasoning_end`, `judge.verdicts.parse_verdict`, `eval/judging/backends.py` "
            "`JudgeServeBackend`")
    assert docs_private_citations(text) == ["judge.verdicts._reasoning_end", "eval/judging/backends.py _cut_rationale",
                                            "eval/scoring/compare.py _SETTINGS"]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_documentation_page_cites_a_private_name(path):
    assert docs_private_citations(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_of_judge_or_train_uses_another_modules_private_names(path):
    own = _module_name(path)
    found = private_uses(path.read_text(encoding="utf-8"))
    assert [name for name in found if not name.startswith(own + ".")] == []


@pytest.mark.parametrize("path", CITING, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_comment_or_docstring_cites_another_modules_private_name(path):
    assert private_citations(path.read_text(encoding="utf-8"), _module_name(path)) == []


def test_the_shared_names_are_public_where_they_are_defined():
    """Each name another module needs is its owner's: importing it by its public name reaches the object the owner's
    own code uses (the field lists the row check reads, the supervisor's setup, the taxonomy's lookup key)."""
    import judge.plumbing.supervisor as supervisor
    import judge.records as records
    import judge.taxonomy as taxonomy
    from judge.record_columns import TEXT_FIELDS

    assert TEXT_FIELDS == (*records.REQUIRED_TEXT_FIELDS, "reference_answer", *records.OPTIONAL_TEXT_FIELDS)
    known = {*records.REQUIRED_TEXT_FIELDS, *records.OPTIONAL_TEXT_FIELDS, *records.BENCHMARK_MARKERS}
    assert known <= records.KNOWN_FIELDS
    assert records.gives_no_id("  ") and not records.gives_no_id(0)
    row = {"id": "a", "instruction": "В", "answer": "О", "criteria_name": "К", "rubrics": "0: нет\n\n1: да",
           "expert_scores": [1], "note": float("nan")}
    first, again = (records.JudgeRecord.from_row(row, source="s", index=i) for i in (0, 1))
    other = records.JudgeRecord.from_row({**row, "note": 0.5}, source="s", index=2)
    assert records.same_content(again, first) and not records.same_content(other, first)  # NaN equal to NaN
    assert taxonomy.name_key("  Ёлка\u2019s  ") == "елка's"
    assert taxonomy.quoted_name("x" * 130, limit=3) == "'xxx'... [130 characters]"
    assert callable(supervisor.child_setup(shielded=True, pdeathsig=False))
    assert supervisor.child_setup(shielded=False, pdeathsig=False) is None
    assert supervisor.LINUX == sys.platform.startswith("linux")


#: The packages whose modules' imports of one another are checked against the owner's ``__all__``.
PACKAGES = ("judge", "train")


def _source_of(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


@functools.cache
def offered(module: str) -> frozenset[str] | None:
    """What a project module offers another to import: its ``__all__`` and its submodules; None for a module that
    keeps no ``__all__`` (or no such module). A literal list is read from the source, without importing it (train's
    modules import torch); the package ``judge``'s, built from its export table, by importing it."""
    path = _source_of(module)
    if path is None:
        return None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            try:
                names = set(ast.literal_eval(node.value))
            except ValueError:
                names = set(importlib.import_module(module).__all__)
            if path.name == "__init__.py":
                names |= {child.stem if child.suffix == ".py" else child.name for child in path.parent.iterdir()
                          if child.suffix == ".py" or (child / "__init__.py").is_file()}
            return frozenset(names)
    return None


def unexported_imports(source: str, own: str, offers: Callable[[str], frozenset[str] | None]) -> list[str]:
    """The names ``source`` (the module ``own``) imports from another judge/ or train/ module that keeps an
    ``__all__`` without them, each as ``module.name``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in PACKAGES
                and node.module != own and (names := offers(node.module)) is not None):
            found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name not in names]
    return found


def test_unexported_imports_by_hand():
    """A name missing from its owner's ``__all__`` is found; one listed, a submodule the owner offers, an import of the
    module itself, a module without ``__all__``, another package's and a relative import are not."""
    owners = {"judge.records": frozenset({"JudgeRecord"}), "judge": frozenset({"records", "load_records"})}
    source = ("from judge.records import JudgeRecord, same_content\n"
              "from judge import records, load_records, shown\n"
              "from judge.other import _own\n"
              "from judge.loose import anything\n"
              "from numpy import asarray\n"
              "from .near import helper\n"
              "def later():\n"
              "    from judge.records import note_duplicate\n")
    assert unexported_imports(source, "judge.other", owners.get) == [
        "judge.records.same_content", "judge.shown", "judge.records.note_duplicate"]


def test_offered_reads_a_literal_all_and_a_packages_export_table():
    import judge
    import judge.records

    assert offered("judge.records") == frozenset(judge.records.__all__)
    assert {"records", "plumbing", "load_records"} <= offered("judge") and "_MODULE_OF" not in offered("judge")
    assert offered("judge.no_such_module") is None


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_what_a_module_imports_from_another_is_in_that_modules_all(path):
    """A name another module imports is part of its owner's contract: where the owner lists its contract in
    ``__all__``, the name is there (``from judge.records import same_content`` while ``__all__`` left it out)."""
    assert unexported_imports(path.read_text(encoding="utf-8"), _module_name(path), offered) == []


def _defined(tree: ast.Module) -> set[str]:
    """The names a module's top level binds: its functions, classes, assignments and imports (under an ``if`` or a
    ``try`` too)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_modules_all_offers_is_defined_there(path):
    """A name added to ``__all__`` with a typo, or left there by a rename, would pass the import check above and
    fail only in the importing module."""
    listed = offered(_module_name(path))
    if listed is None or path.name == "__init__.py":  # a package offers its submodules and its lazy exports too
        return
    assert sorted(listed - _defined(ast.parse(path.read_text(encoding="utf-8")))) == []
