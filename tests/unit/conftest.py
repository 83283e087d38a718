"""What the unit tests alone share (the fixtures both tiers use are in tests/support/, registered in tests/conftest.py)."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path

import pytest

#: What torchrun gives each rank. A test that leaves one set makes every later test on its worker run as a launched
#: rank (judge-train skips its pre-flight TrainingArguments check under a launcher), and which tests come later on a
#: worker differs from machine to machine.
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture(autouse=True)
def no_launcher_variables_left_behind():
    """Fails the test (at its teardown, after monkeypatch's undo) that changed a launcher variable for good, and puts
    the variables back so that the tests after it are not misjudged."""
    before = {name: os.environ.get(name) for name in LAUNCHER_VARIABLES}
    yield
    after = {name: os.environ.get(name) for name in LAUNCHER_VARIABLES}
    if after != before:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        changed = {name: (before[name], after[name]) for name in LAUNCHER_VARIABLES if before[name] != after[name]}
        pytest.fail(f"the test left launcher variables changed (before, after): {changed}")


@pytest.fixture(autouse=True)
def no_import_time_variables_left_behind():
    """Puts back, after each test, the variables a library reads at its import (an ``HF_*`` offline switch, a cache
    folder: ``tests.support.first_contact.read_at_import``) that the test left changed. In-process console mains
    (``run_console_main``) compare the environment they run under with the session's, since the libraries read it
    once: a value left behind by an earlier test, on whichever worker it ran, would refuse every main after it. Put
    back rather than failed: production code called in-process may set one for its own process, as the demo does."""
    from tests.support.first_contact import read_at_import

    before = {name: value for name, value in os.environ.items() if read_at_import(name)}
    yield
    for name in [name for name in os.environ if read_at_import(name) and name not in before]:
        del os.environ[name]
    os.environ.update(before)


@pytest.fixture(autouse=True)
def logging_set_up_put_back():
    """Puts back, after each test, the root logger's level and handlers and the HTTP loggers' levels that a console
    main called by the test itself set up (``configure_logging``: judge-serve's ``--print-config`` and
    ``--check-labels`` do before they read the checkpoint): left at info, or at debug, they would change what every
    later test on its worker logs and captures. Put back rather than failed: setting up its process's logging is
    what a main does (``run_console_main`` puts it back the same way, ``logging_left_as_found``)."""
    from tests.support.first_contact import logging_left_as_found

    with logging_left_as_found():
        yield


@pytest.fixture(scope="session", autouse=True)
def one_tokenizer_load_per_folder():
    """judge-serve's tokenizer loader, remembering what it loaded (``tests.support.serve_in_process.remembering_loader``):
    a worker starts dozens of in-process judge-serves on the same tiny checkpoint, and each load of its tokenizer is
    ~1.5 CPU-s. A test that changes a checkpoint's files, or starts one on a fresh folder, gets a fresh load."""
    import serve.supervision
    from tests.support.serve_in_process import remembering_loader

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serve.supervision, "load_tokenizer", remembering_loader(serve.supervision.load_tokenizer))
        yield


@pytest.fixture(scope="session", autouse=True)
def one_certificate_trust_store(tmp_path_factory):
    """A trust store of one CA certificate (``SSL_CERT_FILE``, which httpx and httpcore2 read first) for this process
    and the commands it starts. httpx builds an SSL context for every client, and with it loads a whole CA bundle
    (certifi's, or the system's that ``SSL_CERT_FILE`` names: ~150 certificates, 20-40 ms a client, whatever the
    URL). The unit tests build hundreds of clients (the toolkit's and the OpenAI SDK's), every one for a plain-HTTP
    endpoint on 127.0.0.1: no certificate is ever checked, so which CAs the store holds changes nothing they test."""
    import certifi

    bundle, end = open(certifi.where(), encoding="ascii").read(), "-----END CERTIFICATE-----"
    store = tmp_path_factory.mktemp("trust-store") / "one-ca.pem"
    store.write_text(bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index(end) + len(end)] + "\n",
                     encoding="ascii")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SSL_CERT_FILE", str(store))
        yield


@pytest.fixture
def collector_off():
    """No automatic collection: a cycle dies only where someone calls ``gc.collect()``."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler (a KeyboardInterrupt in the main thread), whatever an earlier test on this worker
    left installed (serving's tests install judge-serve's), put back as it was afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def submit_config(tmp_path) -> Path:
    """A judge-train config for the ``judge-train submit`` tests: the seq2seq recipe on the bundled sample, its run
    folder ``tmp_path / "run"``."""
    path = tmp_path / "judge.yaml"
    # zero_shot: drop: the bundled sample data holds Zero-Shot rows, which the default refuses (at submit too)
    path.write_text(f"recipe: seq2seq\nper_device_train_batch_size: 4\nzero_shot: drop\n"
                    f"output_dir: {tmp_path / 'run'}\n")
    return path
