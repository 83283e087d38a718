"""pyproject.toml's build requirements admit only a build backend that can read the project's own table."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

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
