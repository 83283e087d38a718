"""The modules of ``eval/ranking`` use one another through public names only: what the leaderboard shares with the
two-run comparison (its loader, refusals, reasons for no call) is part of compare's interface, listed in its
``__all__``, so renaming a private helper of one module cannot break another."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

RANKING = Path(__file__).resolve().parents[2] / "eval" / "ranking"
MODULES = sorted(path.stem for path in RANKING.glob("*.py") if path.stem != "__init__")
PROJECT = ("eval", "judge", "serve", "train")


def private_uses(source: str) -> list[str]:
    """The project's private names (one leading underscore) a module's source imports or reads off a module it
    imported, each as ``module.name``."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # the name bound in the source -> the module it is
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in PROJECT:
            found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_")]
            modules.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROJECT:  # ``import a.b`` binds ``a``; ``import a.b as c`` binds a.b
                    bound = alias.asname or alias.name.split(".")[0]
                    modules[bound] = alias.name if alias.asname else bound
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, (ast.Name, ast.Attribute))):
            owner = ast.unparse(node.value)
            head = owner.split(".")[0]
            if head in modules:
                found.append(f"{modules[head]}{owner[len(head):]}.{node.attr}")
    return found


def test_private_uses_finds_each_way_of_reaching_a_private_name():
    """By hand: the two names imported, the one read off an aliased module, the one read through a dotted import;
    ``self._x``, a dunder and a public name are none."""
    source = ("import eval.ranking.compare as compare\nimport eval.ranking.matrix\n"
              "from eval.ranking.report import _page, write_ranking_compare\nfrom eval.ranking.compare import _f\n"
              "compare._load(x)\neval.ranking.matrix._full_matrices()\nself._x\ncompare.__all__\n"
              "compare.paired_items\n")
    assert sorted(private_uses(source)) == ["eval.ranking.compare._f", "eval.ranking.compare._load",
                                             "eval.ranking.matrix._full_matrices", "eval.ranking.report._page"]


@pytest.mark.parametrize("module", MODULES)
def test_no_module_of_ranking_uses_another_modules_private_names(module):
    assert private_uses((RANKING / f"{module}.py").read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("module", MODULES)
def test_what_a_ranking_module_imports_from_a_sibling_is_in_the_siblings_all(module):
    """The sibling's ``__all__`` says what it offers the package (the leaderboard's loader, refusals and pairing
    helpers from compare among them); a name used across modules and missing from it is an interface no one
    declared."""
    tree = ast.parse((RANKING / f"{module}.py").read_text(encoding="utf-8"))
    undeclared = [f"{node.module}.{alias.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("eval.ranking.")
                  for alias in node.names if alias.name not in importlib.import_module(node.module).__all__]
    assert undeclared == []


def test_compares_all_names_only_what_it_defines():
    """Every name compare offers exists there (a rename that left ``__all__`` behind is caught)."""
    import eval.ranking.compare as compare

    assert [name for name in compare.__all__ if not hasattr(compare, name)] == []
    assert len(compare.__all__) == len(set(compare.__all__))
