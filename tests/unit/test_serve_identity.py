"""What judge-serve's ``GET /v1/models`` says identifies the model it serves: the ``weights_fingerprint`` of the
weights files its own engines load (``serve.layout.weights_fingerprint``), which a resumed ``judge-eval run`` compares
with the one its verdicts were asked of; and the model list read from the engine as plain JSON whatever encoding
the client accepts, as every body judge-serve asks of its engine is (an engine's error too, which it rewrites).

The app runs in process (Starlette's TestClient) in front of a scripted engine on 127.0.0.1 (the network boundary);
each header asserted as it crossed.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fastapi.testclient import TestClient

from judge.checkpoints import JudgeKind
from serve.app import create_app, resolved_verdict_format
from serve.config import ServeConfig
from serve.layout import CheckpointLayout, resolve_layout, weights_fingerprint
from tests.support.serve_in_process import await_bring_up

ENGINE_MODEL = "engine-judge"
AUTH = {"Authorization": "Bearer k"}
REFUSAL = {"error": {"message": "prompt: too long for this model", "type": "BadRequestError", "param": None,
                     "code": 400}}
LISTING = {"object": "list", "data": [{"id": ENGINE_MODEL, "object": "model", "owned_by": "vllm", "max_model_len": 1024}]}


# ---------------------------------------------------------------------------------------------- the fingerprint


def _layout(folder) -> CheckpointLayout:
    return CheckpointLayout(kind=JudgeKind.SEQ2SEQ, root=folder, generator_dir=folder)


def test_the_fingerprint_changes_when_the_weights_are_written_again_and_only_then(tmp_path):
    """A judge retrained into the same folder writes its weights files again: same names, possibly the same sizes,
    a new modification time. The fingerprint follows that, and nothing else the folder holds."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"\0" * 64)
    os.utime(weights, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    first = weights_fingerprint(_layout(folder))
    assert isinstance(first, str) and len(first) == 64
    (folder / "config.json").write_text("{}")  # not weights: no change
    assert weights_fingerprint(_layout(folder)) == first
    weights.write_bytes(b"\1" * 64)  # retrained: same name and size, written again
    os.utime(weights, ns=(1_700_000_000_000_000_001, 1_700_000_000_000_000_001))
    retrained = weights_fingerprint(_layout(folder))
    assert retrained not in (None, first)
    (folder / "model-00002.safetensors").write_bytes(b"\0")  # another shard: another set of weights
    assert weights_fingerprint(_layout(folder)) not in (first, retrained)
    for path in folder.glob("*.safetensors"):
        path.unlink()
    assert weights_fingerprint(_layout(folder)) is None  # nothing to fingerprint: said as nothing


# ---------------------------------------------------------------------------------------------- the scripted engine


class _Engine:
    """A vLLM-like engine that compresses its answers when the request accepts gzip, as a server behind a
    compressing proxy does: ``GET /v1/models``, ``/version`` and ``/health``, and ``POST /tokenize``, refused (400)
    in vLLM's error shape. ``headers`` holds each request's headers (lower-case names) by path."""

    def __init__(self, listing: dict | None = None) -> None:
        self.headers: dict[str, list[dict[str, str]]] = {}
        self.listing = LISTING if listing is None else listing
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.do_GET()

            def do_GET(self):
                engine.headers.setdefault(self.path, []).append({k.lower(): v for k, v in self.headers.items()})
                payloads = {"/v1/models": engine.listing, "/version": {"version": "0.32.0"}, "/health": {}}
                payload = payloads.get(self.path)
                status, data = (200, json.dumps(payload).encode()) if payload is not None else (404, b"{}")
                if self.path == "/tokenize":
                    status, data = 400, json.dumps(REFUSAL).encode()
                gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
                if gzipped:
                    data = gzip.compress(data)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if gzipped:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _serving(model_dir, monkeypatch, engine: _Engine, own_engine: bool) -> TestClient:
    """judge-serve on ``model_dir`` in front of ``engine``. ``own_engine``: as judge-serve started the engine on
    ``model_dir`` itself (the app is built for that; the scripted engine then stands in as an attached one, since a
    unit test starts no vLLM)."""
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    attached = ServeConfig(model=str(model_dir), served_model_name=ENGINE_MODEL, generator_url=engine.url,
                           max_model_len=2048, max_tokens=48, api_key="k").validate()
    if not own_engine:
        return TestClient(create_app(attached), base_url="http://localhost")
    app = create_app(dataclasses.replace(attached, generator_url=""))
    layout = app.state.serve.layout
    app.state.serve = dataclasses.replace(app.state.serve, config=resolved_verdict_format(attached, layout))
    return TestClient(app, base_url="http://localhost")


def _ready(http: TestClient) -> TestClient:
    await_bring_up(http)
    assert http.get("/ready").status_code == 200, http.get("/health").text
    return http


def test_the_model_entry_names_the_fingerprint_of_the_weights_its_own_engine_loads(tiny_causal_dir, monkeypatch):
    engine = _Engine()
    try:
        with _serving(tiny_causal_dir, monkeypatch, engine, own_engine=True) as http:
            listed = _ready(http).get("/v1/models", headers=AUTH).json()["data"]
            one = http.get(f"/v1/models/{ENGINE_MODEL}", headers=AUTH).json()
        with _serving(tiny_causal_dir, monkeypatch, engine, own_engine=False) as http:
            attached = _ready(http).get("/v1/models", headers=AUTH).json()["data"]
    finally:
        engine.close()
    expected = weights_fingerprint(resolve_layout(tiny_causal_dir))
    assert expected is not None
    assert [entry["weights_fingerprint"] for entry in listed] == [expected] and one["weights_fingerprint"] == expected
    # An attached engine loaded what it loaded: judge-serve's folder says nothing about it, so nothing is said.
    assert [entry["id"] for entry in attached] == [ENGINE_MODEL] and "weights_fingerprint" not in attached[0]


def test_a_lora_adapters_entry_keeps_its_own_root_and_no_fingerprint_of_the_checkpoint(tiny_causal_dir, monkeypatch):
    """vLLM lists a LoRA adapter (--lora-modules a=/adapters/A) with its base model as parent and the adapter's folder
    as root. The checkpoint's entry names the checkpoint (judge.wire.root_identity of the layout's root) and its
    weights fingerprint; the adapter's names the digest of its own folder and no fingerprint, which covers the
    checkpoint's files only: on it, judge-eval's resume rule (an equal fingerprint passes) let another adapter served
    under the same name pass."""
    from judge.wire import root_identity

    listing = {"object": "list", "data": [
        {"id": ENGINE_MODEL, "object": "model", "owned_by": "vllm", "max_model_len": 1024, "root": "/engine/model",
         "parent": None},
        {"id": "judge-lora", "object": "model", "owned_by": "vllm", "max_model_len": 1024, "root": "/adapters/A",
         "parent": ENGINE_MODEL}]}
    engine = _Engine(listing)
    try:
        with _serving(tiny_causal_dir, monkeypatch, engine, own_engine=True) as http:
            base, adapter = _ready(http).get("/v1/models", headers=AUTH).json()["data"]
    finally:
        engine.close()
    assert base["root"] == root_identity(str(resolve_layout(tiny_causal_dir).root))
    assert base["weights_fingerprint"] == weights_fingerprint(resolve_layout(tiny_causal_dir))
    assert (adapter["root"], adapter["parent"]) == (root_identity("/adapters/A"), ENGINE_MODEL)
    assert "weights_fingerprint" not in adapter


def test_the_engine_is_asked_for_plain_bodies_whatever_the_client_accepts(tiny_causal_dir, monkeypatch):
    """The model list is read by judge-serve (its fields added) and an engine's error rewritten in OpenAI's shape:
    both are answered anew as plain JSON, so the engine is asked for every body as is, whatever the client's
    Accept-Encoding. (Before: the client's ``gzip`` went to the engine, whose compressed list judge-serve read as
    JSON, a 502 "could not be read", and whose compressed 400 became a message of compressed bytes.) A relayed
    answer goes out as the engine gave it: plain, its Content-Length the plain body's. judge-serve's own reading of
    the engine's list (its probes) asks alike: it follows the 1024-token window the engine lists, not its own
    config's 2048 (before: its probe accepted gzip, read the compressed list as JSON, and silently kept 2048)."""
    engine = _Engine()
    try:
        with _serving(tiny_causal_dir, monkeypatch, engine, own_engine=False) as http:
            _ready(http)
            gzip_only = {**AUTH, "Accept-Encoding": "gzip"}
            listed = http.get("/v1/models", headers=gzip_only)
            one = http.get(f"/v1/models/{ENGINE_MODEL}", headers=gzip_only)
            version = http.get("/version", headers=gzip_only)
            refused = http.post("/tokenize", headers=gzip_only, json={"prompt": "x"})
            followed = http.app.state.serve.engine_windows["generator"]
    finally:
        engine.close()
    assert listed.status_code == 200, listed.text
    assert [entry["id"] for entry in listed.json()["data"]] == [ENGINE_MODEL]
    assert one.status_code == 200 and one.json()["id"] == ENGINE_MODEL, one.text
    assert (refused.status_code, refused.json()["error"]["message"]) == (400, "prompt: too long for this model")
    for path in ("/v1/models", "/version", "/tokenize"):  # the proxied requests carry the client's X-Request-Id
        asked = [h["accept-encoding"] for h in engine.headers[path] if "x-request-id" in h]
        assert asked == ["identity"] * (2 if path == "/v1/models" else 1), (path, asked)
    assert {h.get("accept-encoding") for hs in engine.headers.values() for h in hs} == {"identity"}  # probes too
    assert followed == 1024
    for answer in (listed, one, version, refused):
        assert "content-encoding" not in answer.headers, answer.headers
    assert version.json() == {"version": "0.32.0"}
    assert version.headers["content-length"] == str(len(json.dumps({"version": "0.32.0"}).encode()))
