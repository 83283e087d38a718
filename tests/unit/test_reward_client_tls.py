"""The reward clients build their TLS settings once per process, not once per request: httpx reads and parses the CA
bundle for every client it builds, synchronously, and the async clients build one per request inside the caller's
event loop (verl's reward loop: one per sample), where that work holds every other request of the loop (fast tier)."""

from __future__ import annotations

import asyncio
import ssl

from judge import reward_clients
from judge.reward_clients import compute_score, compute_score_async
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.unit.test_rewards_clients import judge_response, scored


def test_the_ca_bundle_is_read_at_most_once_for_many_requests(monkeypatch):
    """Eight awaited and two synchronous verl scores against a scripted judge-serve: every one is judged, and the CA
    bundle is loaded at most once among them (where each request built its own client, it was loaded ten times)."""
    loads = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self, *args, **kwargs):
        loads.append(args or kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    reward_clients._tls_for.cache_clear()  # an earlier test in this worker may have loaded the store already
    sample = {"data_source": "d", "ground_truth": None, "extra_info": {"instruction": "Q", "criteria": ["A"]}}

    async def eight(url: str) -> list[dict]:
        return await asyncio.gather(*(compute_score_async(solution_str=f"ans {k}", judge_url=url, api_key_env="",
                                                          **sample) for k in range(8)))

    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("A", 2)]]))) as endpoint:
        scores = asyncio.run(eight(endpoint.base_url))
        scores += [compute_score(solution_str=f"sync {k}", judge_url=endpoint.base_url, api_key_env="", **sample)
                   for k in range(2)]
    assert [s["score"] for s in scores] == [1.0] * 10 and len(endpoint.requests) == 10
    assert len(loads) == 1, loads


def test_a_trust_store_named_after_the_first_request_is_the_one_later_requests_load(monkeypatch, tmp_path):
    """A driver that points ``$SSL_CERT_FILE`` at its own CA bundle after a first request gets that bundle loaded for
    the requests after it, as httpx's own default would, not the store the first request found."""
    import certifi

    from judge import reward_clients

    loads = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self, *args, **kwargs):
        loads.append(kwargs.get("cafile", args[0] if args else None))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    sample = {"data_source": "d", "ground_truth": None, "extra_info": {"instruction": "Q", "criteria": ["A"]}}
    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("A", 2)]]))) as endpoint:
        assert compute_score(solution_str="ans", judge_url=endpoint.base_url, api_key_env="", **sample)["score"] == 1.0
    private = tmp_path / "private-ca.pem"
    private.write_bytes(open(certifi.where(), "rb").read())
    monkeypatch.setenv("SSL_CERT_FILE", str(private))
    reward_clients._tls()
    assert loads and loads[-1] == str(private), loads
