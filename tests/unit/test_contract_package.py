"""The contract package ``judge`` hands out its names when first used (PEP 562), so a console script's ``--help``
or a refusal of its arguments imports none of what it never reaches."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import judge


def test_each_exported_name_is_its_modules_own_object():
    """Every name of ``judge.__all__`` is the object its module defines, and ``dir(judge)`` lists it."""
    assert len(judge.__all__) == len(set(judge.__all__)) == 56
    for name in judge.__all__:
        module = importlib.import_module(judge._MODULE_OF[name])
        assert getattr(judge, name) is getattr(module, name), name
    assert set(judge.__all__) <= set(dir(judge))


def test_the_splits_the_contract_names_beside_each_other_are_all_exported():
    """The contract's Splits section gives split_of, splits_of and check_no_leakage side by side; splits_of (an
    instruction's rows together) was only ``judge.splits.splits_of``, and ``judge.splits_of`` an AttributeError."""
    from judge.splits import splits_of

    assert judge.splits_of is splits_of and "splits_of" in judge.__all__
    records = judge.records_from_rows([
        {"id": f"r{i}", "instruction": "Одна инструкция", "answer": "о", "criteria_name": name,
         "rubrics": "0: а\n\n1: б", "task_type": "Editing"}
        for i, name in enumerate(("Креативность", "Качество рифмы"))])
    assert [judge.split_of(r) for r in records] == [judge.STANDARD, judge.ZERO_SHOT]
    assert judge.splits_of(records) == [judge.ZERO_SHOT, judge.ZERO_SHOT]


def test_submodules_are_attributes_and_an_unknown_name_is_an_attribute_error():
    assert judge.prompts.PAIRWISE_PROMPT_VERSION == importlib.import_module("judge.prompts").PAIRWISE_PROMPT_VERSION
    assert judge.plumbing.__name__ == "judge.plumbing"
    with pytest.raises(AttributeError, match="module 'judge' has no attribute 'render_promt'"):
        judge.render_promt  # noqa: B018 - the lookup is the test


def test_importing_the_contract_or_asking_for_help_loads_no_numpy_arrow_or_pydantic():
    """A fresh interpreter: `import judge` and judge-eval's and judge-serve's parsers (what `--help` builds) leave
    numpy, pyarrow and pydantic unimported; the first lookup of the columns type brings numpy in."""
    probe = (
        "import sys, judge, eval.cli, serve.cli; eval.cli.build_parser(); serve.cli.build_parser(); "
        "print(sorted(m for m in ('numpy', 'pyarrow', 'pydantic') if m in sys.modules)); "
        "judge.RecordColumns; print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]
