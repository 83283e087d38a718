"""What tests/unit/test_serve_engine_version.py and tests/integration/serving/test_serve_engine_version.py share."""

from __future__ import annotations

from pathlib import Path


from tests.support.scripted_endpoint import ScriptedEndpoint

ROOT = Path(__file__).parents[2]


def version_endpoint(version: str = "0.32.0", status: int = 200, port: int = 0) -> ScriptedEndpoint:
    """A stand-in engine on 127.0.0.1 (the network boundary): ``GET /version`` answers ``version`` (or ``status``
    with no vLLM body), every other path 404; ``gets`` records each GET path in arrival order."""

    def respond_get(path: str) -> tuple[int, dict]:
        if path == "/version" and status == 200:
            return 200, {"version": version}
        return (status if path == "/version" else 404), {"detail": "Not Found"}

    return ScriptedEndpoint(lambda path, body: (404, {"detail": "Not Found"}), respond_get=respond_get, port=port)

