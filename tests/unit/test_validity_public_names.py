"""The validity section's modules reach other modules through public names only: what they share with the scoring
(the item table's label groups) and what other modules cite as a rule (the ends the judge's levels are read
against) is a public name of the module that owns it, so that renaming a private helper of one module cannot break
another, nor leave a citation pointing at nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.test_ranking_public_names import private_uses

ROOT = Path(__file__).resolve().parents[2]
VALIDITY = ROOT / "eval" / "validity"
MODULES = sorted(path.stem for path in VALIDITY.glob("*.py") if path.stem != "__init__")
#: ``eval.validity.section._rating_ends``: a project module's dotted path, then a name with one leading underscore.
_PRIVATE_CITATION = re.compile(r"\b((?:judge|train|serve|eval)(?:\.[a-z_0-9]+)*)\.(_[A-Za-z]\w*)")


@pytest.mark.parametrize("module", MODULES)
def test_no_validity_module_imports_another_modules_private_names(module):
    assert private_uses((VALIDITY / f"{module}.py").read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("module", MODULES)
def test_no_validity_module_cites_another_modules_private_name(module):
    """A comment or docstring citing ``eval.validity.section._rating_ends`` from another module names a rule by a
    name its owner may rename at will; the module's own private names and dunders are no such citation."""
    own = f"eval.validity.{module}"
    cited = [f"{owner}.{name}" for owner, name in _PRIVATE_CITATION.findall(
        (VALIDITY / f"{module}.py").read_text(encoding="utf-8")) if owner != own and not name.startswith("__")]
    assert cited == []


def test_the_shared_names_are_declared_where_they_live():
    """The two names the rule above made public are in their modules' ``__all__`` (a rename that left it behind is
    caught), and the docs cite the public one."""
    from eval.scoring import item_table
    from eval.validity import section

    assert "label_groups" in item_table.__all__ and callable(item_table.label_groups)
    assert "rating_ends" in section.__all__ and callable(section.rating_ends)
    docs = (ROOT / "docs" / "validity.md").read_text(encoding="utf-8")
    assert "section._rating_ends" not in docs and "eval.validity.section.rating_ends" in docs
