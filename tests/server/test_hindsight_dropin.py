"""Engram as a drop-in for Hindsight 1.1.0 (issue 23), through the real
`hindsight-client` against a real server on 127.0.0.1: lazy banks, metadata,
tags, reflect's options, request-time timestamps, the fields Hindsight fills,
update_mode="append", error bodies without paths, and the routes beyond the
core three. One server for the module; each test its own bank."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.server.conftest import TOKEN

pytestmark = pytest.mark.slow  # a server and the client (3 s to import) per worker


def run(coro):
    return asyncio.get_event_loop().run_until_complete(coro)


def api_error() -> type[Exception]:
    from hindsight_client_api.exceptions import ApiException

    return ApiException


@pytest.fixture
def client(served):
    from hindsight_client import Hindsight

    with Hindsight(base_url=served.url, api_key=TOKEN, timeout=120) as client:
        yield client


def texts(response) -> set[str]:
    return {r.text for r in response.results}


def test_a_bank_is_made_by_its_first_retain_and_reads_of_none_are_404(client, served, bank_id):
    for read in (
        lambda: client.recall(bank_id, "anything"),
        lambda: client.list_memories(bank_id),
        lambda: run(client.documents.list_documents(bank_id)),
    ):
        with pytest.raises(api_error()) as error:
            read()
        assert error.value.status == 404 and bank_id in error.value.body
        assert str(served.engine.home) not in error.value.body  # never a path
    answer = client.reflect(bank_id, "What do you know?")
    assert "nothing to answer from" in answer.text
    assert bank_id not in served.banks.names()  # a reflect makes no bank
    assert client.retain(bank_id, "Quinn keeps bees on the roof.").success
    assert bank_id in served.banks.names()
    assert any("bees" in t for t in texts(client.recall(bank_id, "Who keeps bees?")))


def test_metadata_is_kept_returned_and_sized(client, bank_id):
    metadata = {"source": "crewai", "agent": "researcher", "speaker": "Quinn"}
    client.retain(bank_id, "I keep bees on the roof.", metadata=metadata, document_id="d1")
    (result,) = client.recall(bank_id, "Who keeps bees?").results
    assert result.metadata == metadata
    assert result.document_id == "d1" and result.chunk_id == "d1:0"
    (item,) = client.list_memories(bank_id).items
    assert item.metadata == metadata
    detail = run(client.memory.get_memory(bank_id, item.id))
    assert detail["metadata"] == metadata and detail["source_turns"][0]["speaker"] == "Quinn"
    document = run(client.documents.get_document(bank_id, "d1"))
    assert document.document_metadata["metadata"] == metadata
    with pytest.raises(api_error()) as error:
        client.retain(bank_id, "x", metadata={"k": "v" * 10_001})
    assert error.value.status == 422 and "metadata" in error.value.body
    assert "10,000" in error.value.body


def test_tags_filter_recall_list_and_reflect_as_hindsight_does(client, http, bank_id):
    items = [
        {"content": "Project X kickoff meeting on Monday.", "tags": ["px", "meetings"]},
        {"content": "Project X design document drafted.", "tags": ["px", "docs"]},
        {"content": "Project Y sprint planning meeting.", "tags": ["py", "meetings"]},
        {"content": "The cafeteria serves soup on Fridays."},
    ]
    items = [{**item, "strategy": "verbatim"} for item in items]  # the texts as given
    client.retain_batch(bank_id, items, retain_async=False)

    def recall(**kw):
        return texts(client.recall(bank_id, "meeting notes", max_tokens=2000, **kw))

    assert recall(tags=["px"], tags_match="any_strict") == {
        "Project X kickoff meeting on Monday.",
        "Project X design document drafted.",
    }
    assert recall(tags=["px", "meetings"], tags_match="all_strict") == {
        "Project X kickoff meeting on Monday."
    }
    assert recall(tags=["px"], tags_match="any") >= {"The cafeteria serves soup on Fridays."}
    assert recall(tags=["px", "docs"], tags_match="exact") == {"Project X design document drafted."}
    assert recall(
        tag_groups=[{"tags": ["meetings"], "match": "any_strict"}, {"not": {"tags": ["py"]}}]
    ) == {"Project X kickoff meeting on Monday."}
    listed = client.list_memories(bank_id, tags=["py"], tags_match="any_strict")
    assert [m.text for m in listed.items] == ["Project Y sprint planning meeting."]
    assert listed.items[0].tags == ["py", "meetings"]
    answer = client.reflect(
        bank_id, "What happened?", tags=["py"], tags_match="any_strict", include_facts=True
    )
    assert [f.text for f in answer.based_on.memories] == ["Project Y sprint planning meeting."]
    tags = run(client.memory.list_tags(bank_id))
    assert {(t.tag, t.count) for t in tags.items} == {
        ("px", 2),
        ("meetings", 2),
        ("docs", 1),
        ("py", 1),
    }
    sometimes = {"query": "x", "tags": ["a"], "tags_match": "sometimes"}
    answer = http.post(f"/v1/default/banks/{bank_id}/memories/recall", json=sometimes)
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"][-1] == "tags_match"


def test_document_tags_reach_every_item(client, bank_id):
    client.retain_batch(
        bank_id,
        [
            {"content": "Rome has many fountains.", "tags": ["trip"], "strategy": "verbatim"},
            {"content": "Pasta is cheap.", "strategy": "verbatim"},
        ],
        document_tags=["italy"],
    )
    units = client.list_memories(bank_id).items
    assert sorted(tuple(u.tags) for u in units) == [("italy",), ("trip", "italy")]


def test_reflect_max_tokens_context_and_structured_output(client, served, bank_id):
    client.retain_batch(
        bank_id,
        [
            {
                "content": "Python is the usual first language for data science.",
                "strategy": "verbatim",
            },
            {"content": "Rust is popular for systems programming.", "strategy": "verbatim"},
        ],
    )
    short = client.reflect(bank_id, "Which languages are popular?", max_tokens=25)
    assert served.engine.embedder.count_tokens(short.text) <= 25
    with_context = client.reflect(
        bank_id, "Which should I learn?", context="I want to do data science", include_facts=True
    )
    assert with_context.based_on.memories[0].text.startswith("Python")
    schema = {
        "type": "object",
        "properties": {
            "recommendation": {"type": "string"},
            "reasons": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["recommendation", "reasons"],
    }
    shaped = client.reflect(bank_id, "What should I learn?", response_schema=schema)
    assert shaped.structured_output["reasons"] and shaped.structured_output_error is None
    counted = client.reflect(
        bank_id,
        "How sure are you?",
        response_schema={
            "type": "object",
            "properties": {"certainty": {"type": "number"}},
            "required": ["certainty"],
        },
    )
    assert counted.structured_output is None and "certainty" in counted.structured_output_error
    with pytest.raises(api_error()) as error:
        client.reflect(bank_id, "x", response_schema={"type": "wrong"})
    assert error.value.status == 422 and "response_schema" in error.value.body


def test_without_a_timestamp_the_request_time_is_the_mention_time(client, bank_id):
    before = datetime.now(UTC).replace(tzinfo=None)
    client.retain(bank_id, "I went to the dentist yesterday.", context="diary")
    after = datetime.now(UTC).replace(tzinfo=None)
    (item,) = client.list_memories(bank_id).items
    mentioned = datetime.fromisoformat(item.mentioned_at)
    assert before - timedelta(seconds=1) <= mentioned <= after + timedelta(seconds=1)
    assert (
        datetime.fromisoformat(item.occurred_start).date() == (mentioned - timedelta(days=1)).date()
    )
    assert item.context == "diary"
    client.retain(bank_id, "Water boils at 100 degrees at sea level.", timestamp="unset")
    timeless = [m for m in client.list_memories(bank_id).items if "boils" in m.text]
    assert timeless[0].mentioned_at is None and timeless[0].occurred_start is None


def test_update_mode_append_extends_a_document_turn_by_turn(client, http, bank_id):
    client.retain(bank_id, "Noor: I adopted a kitten.", document_id="chat")
    (first,) = client.list_memories(bank_id).items
    http.patch(
        f"/v1/default/banks/{bank_id}/memories/{first.id}", json={"text": "Noor adopted a kitten."}
    ).raise_for_status()
    client.retain(bank_id, "Noor: I named her Pixel.", document_id="chat", update_mode="append")
    document = run(client.documents.get_document(bank_id, "chat"))
    assert document.original_text.splitlines() == [
        "Noor: I adopted a kitten.",
        "Noor: I named her Pixel.",
    ]
    by_id = {m.id: m.text for m in client.list_memories(bank_id).items}
    assert by_id[first.id] == "Noor adopted a kitten."  # the curated memory stays
    assert len(by_id) == 2 and any("Pixel" in t for t in by_id.values())
    chunks = run(client.documents.list_document_chunks(bank_id, "chat"))
    assert [c.chunk_id for c in chunks.items] == ["chat:0", "chat:1"]


def test_filled_fields(client, bank_id):
    client.retain(
        bank_id,
        "Zoe bought a tandem bicycle.",
        document_id="z",
        timestamp="2024-05-01T09:00:00Z",
        strategy="verbatim",
    )
    response = client.recall(bank_id, "What did Zoe buy?", include_chunks=True)
    (result,) = response.results
    assert (result.document_id, result.chunk_id) == ("z", "z:0")
    assert result.mentioned_at.startswith("2024-05-01T09:00")
    assert response.chunks["z:0"].text == "Zoe bought a tandem bicycle."
    documents = run(client.documents.list_documents(bank_id))
    assert documents.items[0].text_length == len("Zoe bought a tandem bicycle.")
    assert not client.get_version().features.audit_log
    with pytest.raises(api_error()) as error:
        run(client.audit.list_audit_logs(bank_id))
    assert error.value.status == 501


def test_memory_curation_through_hindsight_routes_is_undoable(client, http, bank_id):
    client.retain(
        bank_id, "Ivo lives in Split.", timestamp="2024-01-02T00:00:00", strategy="verbatim"
    )
    (memory,) = client.list_memories(bank_id).items
    base = f"/v1/default/banks/{bank_id}/memories/{memory.id}"
    corrected = http.patch(base, json={"text": "Ivo lives in Zadar."}).json()
    assert corrected["text"] == "Ivo lives in Zadar."
    gone = http.patch(base, json={"state": "invalidated", "reason": "moved away"}).json()
    assert gone["state"] == "invalidated"
    assert not client.recall(bank_id, "Where does Ivo live?").results
    assert client.list_memories(bank_id, state="invalidated").total == 1
    history = http.get(base + "/history").json()["history"]
    assert history[0]["after"]["reason"] == "moved away"
    http.post(f"/engram/v1/banks/{bank_id}/undo").raise_for_status()  # the hide
    http.post(f"/engram/v1/banks/{bank_id}/undo").raise_for_status()  # the edit
    assert texts(client.recall(bank_id, "Where does Ivo live?")) == {"Ivo lives in Split."}
    missing = http.patch(f"/v1/default/banks/{bank_id}/memories/nope", json={"text": "x"})
    assert missing.status_code == 404
    cleared = http.delete(f"/v1/default/banks/{bank_id}/memories").json()
    assert cleared["deleted_count"] == 1 and client.list_memories(bank_id).total == 0


def test_the_other_routes(client, http, bank_id):
    client.retain(bank_id, "Ola paints murals downtown.")
    base = f"/v1/default/banks/{bank_id}"
    series = http.get(base + "/stats/memories-timeseries", params={"period": "1d"}).json()
    assert sum(b["world"] + b["experience"] for b in series["buckets"]) == 1
    # Every hour of the last day, the one it started in and the current one.
    assert len(series["buckets"]) in (24, 25) and series["trunc"] == "hour"
    health = http.post(base + "/health/llm").json()
    assert {o["operation"] for o in health["operations"]} == {"retain", "consolidation", "reflect"}
    assert health["operations"][0]["status"] == "not_configured"
    op = client.retain(bank_id, "Ola sold a mural.", retain_async=True).operation_id
    cancel = http.delete(f"{base}/operations/{op}")
    assert cancel.status_code in (200, 409)  # queued, or already running on a fast machine
    for path in ("mental-models", "directives", "webhooks", "audit-logs"):
        answer = http.get(f"{base}/{path}")
        assert answer.status_code == 501 and "not supported by Engram" in answer.json()["detail"]
    assert http.get(f"{base}/no-such-thing").status_code == 404


def test_no_error_body_shows_a_path(served, http):
    home = str(served.engine.home)
    for method, path, body in [
        ("GET", "/v1/default/banks/ghost/profile", None),
        ("POST", "/v1/default/banks/ghost/memories/recall", {"query": "x"}),
        ("DELETE", "/v1/default/banks/ghost", None),
        ("GET", "/v1/default/banks/ghost/documents/x", None),
        ("POST", "/engram/v1/banks/ghost/recall", {"query": "x"}),
    ]:
        answer = http.request(method, path, json=body)
        assert answer.status_code == 404, (path, answer.text)
        assert home not in answer.text and "/banks" not in json.dumps(answer.json()["detail"])
