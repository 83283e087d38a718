"""pyproject.toml's build requirements admit only a build backend that can read the project's own table, and its
dependencies name every package the code imports."""

from __future__ import annotations

import ast
import fnmatch
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def test_the_setuptools_floor_reads_the_license_expression():
    """`license = "MIT"` is a PEP 639 license expression, which setuptools reads from 77.0 on; 68 to 76 stop the build
    ("`project.license` must be valid exactly by one definition"). A build without isolation takes whatever setuptools
    the environment has (Ubuntu 24.04's is 68.1), so the floor must exclude those."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert isinstance(project["project"]["license"], str)
    backend = [Requirement(r) for r in project["build-system"]["requires"] if Requirement(r).name == "setuptools"]
    assert len(backend) == 1
    assert list(backend[0].specifier.filter(["68.0.0", "68.1.2", "76.1.0", "77.0.0", "80.9.0"])) == ["77.0.0", "80.9.0"]


def test_the_declared_license_ships_its_text():
    """MIT asks that its notice go with every copy: `license = "MIT"` needs the text in a LICENSE file, which
    setuptools 77+ puts in the wheel's and the sdist's metadata by its default `license-files` patterns."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert project["license"] == "MIT" and text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text and "license-files" not in project


def test_every_data_file_in_the_packages_is_package_data():
    """A wheel carries a package's non-Python files only where [tool.setuptools.package-data] names them: a new file
    under judge/data/ (or a page's template) of a kind no pattern names would be missing from every install that is
    not an editable one. A pattern's `*` stays within one folder, as setuptools' globs do."""
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "judge", "train", "serve",
                             "eval"], cwd=REPO, capture_output=True, text=True, check=True, timeout=30).stdout.split()
    data = [path for path in listed if not path.endswith(".py")]
    assert "judge/data/sample.jsonl" in data and "eval/reports/html/page.js" in data

    def shipped(path: str) -> bool:
        package, _, inside = path.partition("/")
        return any(inside.count("/") == pattern.count("/") and fnmatch.fnmatchcase(inside, pattern)
                   for pattern in patterns.get(package, []))

    assert [path for path in data if not shipped(path)] == []


def _wheel_modules(repo: Path) -> list[str]:
    """The tracked or new .py files under the four packages that are not in a package setuptools' discovery finds
    ([tool.setuptools.packages.find]: folders with an ``__init__.py``, whose parents have one too); [] when every
    module is shipped."""
    from setuptools import find_packages

    find = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
    packages = set(find_packages(where=str(repo), include=find["include"], exclude=find.get("exclude", ())))
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "judge", "train", "serve",
                             "eval"], cwd=repo, capture_output=True, text=True, check=True, timeout=30).stdout.split()
    return [path for path in listed if path.endswith(".py") and (repo / path).is_file()
            and Path(path).parent.as_posix().replace("/", ".") not in packages]


def test_every_module_in_the_packages_is_in_a_package_the_wheel_ships(tmp_path):
    """A folder of modules without ``__init__.py`` imports in a checkout and an editable install (as a namespace
    package) but is no package setuptools' discovery finds, so a wheel leaves its modules out: every import of them
    fails in an installed copy only. Shown on a repository of the same pyproject.toml with one such folder."""
    assert _wheel_modules(REPO) == []
    copy = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(copy)], check=True, timeout=30)
    (copy / "pyproject.toml").write_bytes((REPO / "pyproject.toml").read_bytes())
    (copy / "eval" / "judging").mkdir(parents=True)
    (copy / "eval" / "__init__.py").write_text("")
    (copy / "eval" / "judging" / "__init__.py").write_text("")
    (copy / "eval" / "judging" / "extra").mkdir()
    (copy / "eval" / "judging" / "extra" / "module.py").write_text("")
    assert _wheel_modules(copy) == ["eval/judging/extra/module.py"]


def test_judge_train_submits_default_template_ships_in_the_wheel():
    """`judge-train submit` renders its sbatch template from inside the train package, where an installed wheel has
    it too ([tool.setuptools.package-data] names it); slurm/train.sbatch, which the docs and `sbatch` use in a clone,
    is the same file."""
    from train.slurm_submit import DEFAULT_SCRIPT

    package = REPO / "train"
    assert DEFAULT_SCRIPT.is_file() and DEFAULT_SCRIPT.is_relative_to(package), DEFAULT_SCRIPT
    inside = DEFAULT_SCRIPT.relative_to(package).as_posix()
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert any(fnmatch.fnmatchcase(inside, pattern) and inside.count("/") == pattern.count("/")
               for pattern in patterns.get("train", [])), inside
    assert (REPO / "slurm" / "train.sbatch").resolve() == DEFAULT_SCRIPT.resolve()


def _declared() -> set[str]:
    """The distributions an install of the packages may bring: the dependencies and the runtime extras (a guarded
    `import vllm` is one of the vllm extras'); the dev and docs extras serve the repository's tests and site, and no
    `pip install pollux-judge[...]` a user runs brings them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"]) + [r for name, extra in project["optional-dependencies"].items()
                                                     if name not in ("dev", "docs") for r in extra]
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_a_dev_only_package_is_not_declared_for_the_packages_imports():
    """psutil is in the dev extra alone (the tests inspect server process trees with it): the packages importing it
    would fail on an install without the dev extra, so the import walk below must not count it as declared."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    dev = extras["dev"]
    assert "psutil" in {canonicalize_name(Requirement(r).name) for r in dev}
    assert "psutil" not in _declared()


def test_every_third_party_import_in_the_packages_is_a_declared_dependency():
    """A package the code imports by name must be one pyproject.toml names: one that arrives only as another
    dependency's dependency goes when that dependency changes its own (openai 3 brought httpx2 and dropped httpx), and
    the import fails, or the object the code builds no longer fits. Imports inside functions count too."""
    distributions = packages_distributions()
    declared = _declared()
    undeclared = {}
    for package in ("judge", "train", "serve", "eval"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("judge", "train", "serve", "eval"):
                        continue
                    names = {canonicalize_name(d) for d in distributions.get(top, [])}
                    if not names & declared:
                        undeclared.setdefault(top, str(path.relative_to(REPO)))
    assert undeclared == {}


def test_the_openai_floor_is_a_release_built_on_httpx2():
    """train/synthetic/client.py hands the openai SDK an httpx2 client (WholeAnswerClient); openai before 3.0 is built
    on httpx and refuses it, so the floor admits 3.0 on and never a 2.x."""
    [openai] = [Requirement(r) for r in tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
                ["project"]["dependencies"] if Requirement(r).name == "openai"]
    assert list(openai.specifier.filter(["1.40.0", "2.9.0", "3.0.0", "3.63.0"])) == ["3.0.0", "3.63.0"]
