"""Security and bad input: bearer token, loopback by default, body limit, 422s
naming the field, 404 for unknown banks, no path traversal, no CORS."""

from __future__ import annotations

import os
import stat

import httpx
import pytest

from core import Engine, InvalidInputError
from core.server import ServedBanks, api_token, start_server
from core.server import token as token_module
from tests.server.conftest import TOKEN


@pytest.mark.slow
def test_every_request_needs_the_token(served):
    # /openapi.json and /docs hold no bank data and answer loopback without the
    # token (tests/server/test_api_docs.py); everything else needs it.
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        for path in ("/health", "/v1/default/banks", "/mcp", "/engram/v1/banks"):
            r = httpx.get(served.url + path, headers=headers, timeout=120)
            assert r.status_code == 401, (path, headers)
            assert r.headers["www-authenticate"] == "Bearer"
    ok = httpx.get(
        served.url + "/health", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    )
    assert ok.status_code == 200


def test_the_token_is_compared_in_constant_time(monkeypatch):
    calls = []
    real = token_module.hmac.compare_digest
    monkeypatch.setattr(
        token_module.hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b)
    )
    assert token_module.token_matches("secret", "Bearer secret")
    assert not token_module.token_matches("secret", "Bearer secreT")
    assert len(calls) == 2


def test_api_token_is_made_once_with_owner_only_permissions(tmp_path, monkeypatch):
    monkeypatch.delenv("ENGRAM_API_TOKEN", raising=False)
    first = api_token(tmp_path)
    assert len(first) >= 32 and api_token(tmp_path) == first
    mode = stat.S_IMODE(os.stat(tmp_path / "api-token").st_mode)
    assert mode == 0o600
    monkeypatch.setenv("ENGRAM_API_TOKEN", "from-the-environment")
    assert api_token(tmp_path) == "from-the-environment"


def test_a_non_loopback_bind_needs_the_token_set(tmp_path, monkeypatch):
    monkeypatch.delenv("ENGRAM_API_TOKEN", raising=False)
    with Engine(tmp_path) as engine:
        served = ServedBanks(engine, open_on_demand=True)
        with pytest.raises(InvalidInputError, match="ENGRAM_API_TOKEN"):
            start_server(served, "0.0.0.0", 0, "t", mcp=False)
        monkeypatch.setenv("ENGRAM_API_TOKEN", "a-long-random-secret")
        handle = start_server(served, "0.0.0.0", 0, "a-long-random-secret", mcp=False)
        handle.stop()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A server whose request bodies are limited to 1,000 bytes."""
    with Engine(tmp_path_factory.mktemp("small")) as engine:
        engine.create_bank("limited")
        served = ServedBanks(engine, open_on_demand=True)
        handle = start_server(served, "127.0.0.1", 0, TOKEN, max_body_bytes=1000, mcp=False)
        try:
            yield handle.url
        finally:
            handle.stop()
            served.close()


def test_a_body_over_the_limit_is_413(small):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    url = small + "/v1/default/banks/limited/memories/recall"
    big = {"query": "x" * 2000}
    assert httpx.post(url, json=big, headers=headers, timeout=120).status_code == 413

    def chunks():  # no Content-Length: counted as it streams in
        yield b'{"query": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    r = httpx.post(
        url, content=chunks(), headers={**headers, "content-type": "application/json"}, timeout=120
    )
    assert r.status_code == 413, r.text
    assert "limit" in r.json()["detail"]


def test_malformed_json_and_wrong_types_are_422_naming_the_field(http, bank_id):
    http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()
    recall = f"/v1/default/banks/{bank_id}/memories/recall"
    r = http.post(recall, content=b'{"query": ', headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid"
    r = http.post(recall, json={"query": "x", "max_tokens": "many"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "max_tokens"]
    r = http.post(recall, json={"query": "x", "budget": "huge"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "budget"]
    r = http.post(recall, json={"query": "x", "qeury": "typo"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "qeury"]
    r = http.post(
        f"/v1/default/banks/{bank_id}/memories",
        json={"items": [{"content": "x", "timestamp": "last tuesday"}]},
    )
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"][:4] == ["body", "items", 0, "timestamp"]
    before = http.get(f"/v1/default/banks/{bank_id}/stats").json()["total_nodes"]
    assert before == 0  # nothing of the refused requests was written


def test_unknown_bank_is_404(http):
    for method, path, body in [
        ("GET", "/v1/default/banks/nobody/profile", None),
        ("POST", "/v1/default/banks/nobody/memories/recall", {"query": "x"}),
        ("GET", "/v1/default/banks/nobody/memories/list", None),
        ("DELETE", "/v1/default/banks/nobody", None),
        ("POST", "/engram/v1/banks/nobody/recall", {"query": "x"}),
    ]:
        r = http.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert "nobody" in r.json()["detail"]
    # Reads never make a bank; a retain is what does (as in Hindsight).
    assert http.post(
        "/v1/default/banks/nobody/memories", json={"items": [{"content": "x"}]}
    ).is_success
    assert http.get("/v1/default/banks/nobody/profile").is_success


def test_bank_ids_never_reach_a_path(served, http):
    home = served.engine.home
    outside = home.parent / "escape"
    # Encoded, so the client does not normalise them away before they arrive.
    for bank_id in ("..%2Fescape", "..%2F..%2Fescape", "%2Fetc%2Fpasswd", "%2E%2E"):
        r = http.get(f"/v1/default/banks/{bank_id}/profile")
        assert r.status_code == 404, (bank_id, r.text)
    # A bank id with a slash cannot be addressed at all; one with dots is a name.
    assert http.put("/v1/default/banks/..%2Fescape", json={}).status_code == 404
    r = http.put("/v1/default/banks/%2E%2E", json={})
    assert r.status_code == 200 and r.json()["bank_id"] == "..", r.text
    assert not outside.exists()
    folders = [p for p in served.engine.banks_dir.iterdir() if p.is_dir()]
    assert all(p.parent == served.engine.banks_dir for p in folders)
    assert http.get("/v1/default/banks/%2E%2E/profile").status_code == 200


def test_no_cors(http):
    origin = {"Origin": "https://evil.example"}
    preflight = http.options(
        "/v1/default/banks",
        headers={**origin, "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    r = http.get("/v1/default/banks", headers=origin)
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_a_bank_another_process_holds_is_listed_and_409_when_used(served, http, bank_id):
    """Listing banks opens each; one held elsewhere used to fail the whole listing."""
    with Engine(served.engine.home) as elsewhere:
        elsewhere.create_bank(bank_id)  # held open, its lock taken
        r = http.get("/v1/default/banks")
        assert r.status_code == 200, r.text
        assert bank_id in [b["bank_id"] for b in r.json()["banks"]]
        used = http.post(f"/v1/default/banks/{bank_id}/memories/recall", json={"query": "x"})
        assert used.status_code == 409 and "another process" in used.json()["detail"]


@pytest.mark.slow
def test_a_retain_the_model_cannot_extract_is_not_acknowledged(tmp_path, embedder, fake_ollama):
    """The fake model answers every extraction with a 500: the retain used to
    answer success with nothing written."""
    from core import EngineSettings

    with Engine(tmp_path, embedder=embedder) as engine:
        engine.set_settings(
            EngineSettings(ollama_host=fake_ollama.url, ollama_model=fake_ollama.models[0])
        )
        engine.create_bank("llm")
        served = ServedBanks(engine, open_on_demand=True)
        handle = start_server(served, "127.0.0.1", 0, TOKEN, mcp=False)
        try:
            r = httpx.post(
                handle.url + "/v1/default/banks/llm/memories",
                json={"items": [{"content": "Erin plays the oboe.", "strategy": "llm"}]},
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=120,
            )
        finally:
            handle.stop()
            served.close()
        assert r.status_code == 502, r.text
        assert "nothing of it was written" in r.json()["detail"]
        assert engine.open_bank("llm").count() == 0
