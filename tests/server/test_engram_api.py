"""Engram's own API under /engram/v1: full recall trace, opinions and their
history, reflection compare, curation with undo/redo/audit, snapshots."""

from __future__ import annotations

import httpx
import pytest

from core import Engine
from core.server import ServedBanks, start_server
from tests.server.conftest import TOKEN

# Alice is the bank's agent: her beliefs are its opinions.
TURNS = [
    ("Alice", "I think Python is the best language for data work.", "2024-03-01T10:00:00"),
    ("Alice", "I believe Bob that remote work is better than office work.", "2024-03-01T10:05:00"),
    ("Alice", "I love hiking with Bob in the Alps.", "2024-03-02T09:00:00"),
]


@pytest.fixture
def bank(http, bank_id):
    http.put(f"/v1/default/banks/{bank_id}", json={"name": "Alice"}).raise_for_status()
    items = [
        {
            "content": text,
            "timestamp": when,
            "metadata": {"speaker": who},
            "strategy": "rules",
            "document_id": "chat",
        }
        for who, text, when in TURNS
    ]
    r = http.post(f"/v1/default/banks/{bank_id}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    return bank_id


def api(bank_id: str, path: str = "") -> str:
    return f"/engram/v1/banks/{bank_id}{path}"


def entity_named(http, bank_id: str, name: str) -> str:
    entities = http.get(f"/v1/default/banks/{bank_id}/entities").json()["items"]
    return next(e["id"] for e in entities if e["canonical_name"] == name)


@pytest.mark.slow
def test_recall_with_its_full_trace(http, bank):
    r = http.post(api(bank, "/recall"), json={"query": "What does Alice think of Python?"})
    assert r.status_code == 200, r.text
    result = r.json()
    assert any("Python" in item["text"] for item in result["items"])
    assert {"channels", "fused", "rerank", "packing", "timings_ms"} <= set(result["trace"])
    only_lexical = http.post(
        api(bank, "/recall"), json={"query": "Python", "channels": ["lexical"]}
    ).json()
    assert set(only_lexical["trace"]["channels"]) == {"lexical"}


def test_opinions_and_their_history(http, bank):
    opinions = http.get(api(bank, "/opinions")).json()["opinions"]
    assert len(opinions) == 3
    assert opinions[0]["confidence"] >= opinions[-1]["confidence"]
    about_bob = http.get(api(bank, "/opinions"), params={"entity": "Bob"}).json()["opinions"]
    assert {o["id"] for o in about_bob} < {o["id"] for o in opinions}
    history = http.get(api(bank, f"/opinions/{opinions[0]['id']}/history")).json()
    assert history["opinion"]["id"] == opinions[0]["id"]
    assert history["steps"] and history["texts"][-1] == opinions[0]["text"]


def test_compare_answers_under_each_disposition_and_commits_nothing(http, bank):
    before = http.get(api(bank, "/reflections")).json()["reflections"]
    r = http.post(
        api(bank, "/reflect/compare"),
        json={
            "query": "Is remote work better?",
            "dispositions": [{"skepticism": 1}, {"skepticism": 5, "empathy": 1}],
        },
    )
    assert r.status_code == 200, r.text
    reflections = r.json()["reflections"]
    assert [x["disposition"]["skepticism"] for x in reflections] == [1, 5]
    assert not any(x["committed"] for x in reflections)
    assert http.get(api(bank, "/reflections")).json()["reflections"] == before
    one = http.post(api(bank, "/reflect/compare"), json={"query": "x", "dispositions": [{}]})
    assert one.status_code == 422


@pytest.mark.slow
def test_curation_edit_rename_merge_split_undo_redo_audit(served, http, bank):
    python = entity_named(http, bank, "Python")
    r = http.patch(api(bank, f"/entities/{python}"), json={"name": "Python 3"})
    assert r.status_code == 200, r.text
    assert python in r.json()["change"]["updated"]["entity"]
    assert served.changes[-1][0] == bank  # the owner heard of it
    assert entity_named(http, bank, "Python 3") == python

    about_bob = http.get(api(bank, "/opinions"), params={"entity": "Bob"}).json()["opinions"]
    unit_id = next(o["id"] for o in about_bob if "remote" in o["text"])
    r = http.patch(api(bank, f"/units/{unit_id}"), json={"text": "Bob prefers remote work."})
    assert r.status_code == 200, r.text
    assert http.get(api(bank, f"/units/{unit_id}")).json()["unit"]["text"] == (
        "Bob prefers remote work."
    )
    http.post(api(bank, "/undo")).raise_for_status()
    assert "I believe" in http.get(api(bank, f"/units/{unit_id}")).json()["unit"]["text"]
    http.post(api(bank, "/redo")).raise_for_status()
    assert http.get(api(bank, f"/units/{unit_id}")).json()["unit"]["text"] == (
        "Bob prefers remote work."
    )

    alps = entity_named(http, bank, "Alps")
    r = http.post(api(bank, f"/entities/{alps}/merge"), json={"into": python})
    assert r.status_code == 200, r.text
    names = [
        e["canonical_name"] for e in http.get(f"/v1/default/banks/{bank}/entities").json()["items"]
    ]
    assert "Alps" not in names
    http.post(api(bank, "/undo")).raise_for_status()
    alice = entity_named(http, bank, "Alice")
    hiking = [
        m["id"]
        for m in http.get(f"/v1/default/banks/{bank}/memories/list", params={"q": "hiking"}).json()[
            "items"
        ]
    ]
    r = http.post(
        api(bank, f"/entities/{alice}/split"), json={"unit_ids": hiking, "name": "Alice Smith"}
    )
    assert r.status_code == 200, r.text
    assert entity_named(http, bank, "Alice Smith") in r.json()["change"]["added"]["entity"]

    audit = http.get(api(bank, "/audit")).json()["entries"]
    actions = [e["action"] for e in audit]
    # The actor is the request's token (this server's one token, the default one).
    assert len(actions) >= 4 and all(e["actor"] == "default" for e in audit)


@pytest.mark.slow
def test_retract_restore_and_purge_with_confirmation(http, bank):
    bob = entity_named(http, bank, "Bob")
    preview = http.get(api(bank, f"/entities/{bob}/retract-preview")).json()
    assert preview["name"] == "Bob" and preview["units"] + preview["opinions"] >= 2
    query = {"query": "remote work office"}

    def recalled() -> str:
        return " ".join(
            i["text"] for i in http.post(api(bank, "/recall"), json=query).json()["items"]
        )

    assert "remote work" in recalled()
    http.post(api(bank, f"/entities/{bob}/retract")).raise_for_status()
    assert "remote work" not in recalled()
    http.post(api(bank, f"/entities/{bob}/restore")).raise_for_status()
    assert "remote work" in recalled()

    count = http.get(f"/v1/default/banks/{bank}/stats").json()["total_nodes"]
    refused = http.post(api(bank, f"/entities/{bob}/purge"), json={"confirm": False})
    assert refused.status_code == 400 and "confirm" in refused.json()["detail"]
    assert http.post(api(bank, f"/entities/{bob}/purge"), json={}).status_code == 422
    assert http.get(f"/v1/default/banks/{bank}/stats").json()["total_nodes"] == count
    http.post(api(bank, f"/entities/{bob}/purge"), json={"confirm": True}).raise_for_status()
    assert "remote work" not in recalled()
    assert http.get(f"/v1/default/banks/{bank}/entities/{bob}").status_code == 404


def test_a_documents_delete_preview_and_reingest(http, bank):
    """Issue 13, item 2 (CLI and API too): what deleting a document would remove,
    listed before anything goes, and a re-ingest of it from its stored turns."""
    listing = f"/v1/default/banks/{bank}/documents"
    [doc] = http.get(listing).json()["items"]
    preview = http.get(api(bank, f"/documents/{doc['id']}/delete-preview"))
    assert preview.status_code == 200, preview.text
    units = preview.json()["units"]
    assert len(units) == doc["memory_unit_count"]
    assert any("remote work" in u["text"] for u in units)
    assert http.get(listing).json()["total"] == 1  # a preview deletes nothing

    done = http.post(api(bank, f"/documents/{doc['id']}/reingest"), json={"mode": "verbatim"})
    assert done.status_code == 200, done.text
    body = done.json()
    assert (body["mode"], body["facts"], body["failures"]) == ("verbatim", len(TURNS), [])
    [again] = http.get(listing).json()["items"]
    assert again["document_metadata"]["extraction_mode"] == "verbatim"
    assert again["memory_unit_count"] == len(TURNS)

    assert http.get(api(bank, "/documents/nothing/delete-preview")).status_code == 404
    assert http.post(api(bank, "/documents/nothing/reingest"), json={}).status_code == 404
    wrong = http.post(api(bank, f"/documents/{doc['id']}/reingest"), json={"mode": "magic"})
    assert wrong.status_code == 422


@pytest.mark.slow
def test_snapshot_export_streams_and_import_validates(http, bank):
    with http.stream("GET", api(bank, "/snapshot")) as r:
        assert r.status_code == 200
        assert r.headers["content-disposition"].endswith('.engram"')
        data = b"".join(r.iter_bytes())
    assert data[:2] == b"PK"
    copy = bank + "-copy"
    r = http.post("/engram/v1/snapshots/import", params={"name": copy}, content=iter([data]))
    assert r.status_code == 200, r.text
    original = http.get(f"/v1/default/banks/{bank}/stats").json()
    assert (
        http.get(f"/v1/default/banks/{copy}/stats").json()["total_nodes"]
        == (original["total_nodes"])
    )
    again = http.post("/engram/v1/snapshots/import", params={"name": copy}, content=data)
    assert again.status_code == 409
    garbage = http.post(
        "/engram/v1/snapshots/import", params={"name": "garbage"}, content=b"not a zip" * 100
    )
    assert garbage.status_code == 422, garbage.text
    banks = [b["bank_id"] for b in http.get("/v1/default/banks").json()["banks"]]
    assert "garbage" not in banks


@pytest.mark.slow
def test_snapshot_uploads_have_their_own_limit(tmp_path):
    with Engine(tmp_path) as engine:
        served = ServedBanks(engine, open_on_demand=True)
        handle = start_server(
            served, "127.0.0.1", 0, TOKEN, max_body_bytes=100, max_snapshot_bytes=10_000, mcp=False
        )
        try:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            url = handle.url + "/engram/v1/snapshots/import"
            r = httpx.post(url, content=iter([b"x" * 5000] * 3), headers=headers, timeout=120)
            assert r.status_code == 413
            r = httpx.post(url, content=b"x" * 5000, headers=headers, timeout=120)
            assert r.status_code == 422  # within the limit, refused by the importer
            assert engine.banks() == []
        finally:
            handle.stop()
