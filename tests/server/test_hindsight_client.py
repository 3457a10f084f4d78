"""The real `hindsight-client` 1.1.0, unchanged, against a real server: an agent
written for Hindsight switches to Engram by changing its base URL."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.server.conftest import TOKEN

# The whole compatibility suite: a server and a client (3 s to import) per worker.
pytestmark = pytest.mark.slow

CONVERSATION = [
    ("Alice", "I adopted a grey cat named Miso last week.", "2024-03-04T10:00:00"),
    ("Bob", "Congratulations! I started learning the cello in January.", "2024-03-04T10:01:00"),
    ("Alice", "I work as a nurse at the Riverside hospital.", "2024-03-04T10:02:00"),
]


def api_error() -> type[Exception]:
    """The client's error type. The client is imported when a test runs, not at
    collection (about 3 s, paid by every xdist worker)."""
    from hindsight_client_api.exceptions import ApiException

    return ApiException


def hindsight(url: str, **options):
    from hindsight_client import Hindsight

    return Hindsight(base_url=url, **options)


def run(coro):
    """Run one of the client's async low-level calls on the loop its sync calls use."""
    return asyncio.get_event_loop().run_until_complete(coro)


@pytest.fixture
def client(served):
    with hindsight(served.url, api_key=TOKEN, timeout=120) as client:
        yield client


@pytest.fixture
def filled(client, bank_id):
    """A bank holding one three-turn conversation, retained as one document."""
    client.create_bank(bank_id, name="Alice's assistant", mission="Helps Alice.")
    items = [
        {
            "content": text,
            "timestamp": when,
            "context": "chat with Bob",
            "metadata": {"speaker": speaker},
        }
        for speaker, text, when in CONVERSATION
    ]
    response = client.retain_batch(bank_id, items, document_id="chat-1")
    assert response.success and response.items_count == 3
    return bank_id


def test_version_and_health(client):
    version = client.get_version()
    assert version.api_version == "1.1.0"
    assert version.features.mcp and not version.features.file_upload_api
    health = run(client.monitoring.health_endpoint_health_get())
    assert health["status"] == "healthy"


def test_create_list_delete_banks(client, bank_id):
    profile = client.create_bank(
        bank_id, name="Ops agent", mission="Keeps the servers up.", disposition_skepticism=5
    )
    assert profile.bank_id == bank_id
    assert profile.name == "Ops agent"
    assert profile.mission == "Keeps the servers up."
    assert profile.disposition.skepticism == 5
    listed = run(client.banks.list_banks())
    assert bank_id in [b.bank_id for b in listed.banks]
    assert run(client.banks.get_bank_profile(bank_id)).disposition.skepticism == 5
    # create_bank on an existing bank updates it
    assert client.create_bank(bank_id, disposition_empathy=1).disposition.empathy == 1
    deleted = client.delete_bank(bank_id)
    assert deleted.success
    listed = run(client.banks.list_banks())
    assert bank_id not in [b.bank_id for b in listed.banks]
    with pytest.raises(api_error()) as error:
        run(client.banks.get_bank_profile(bank_id))
    assert error.value.status == 404


def test_retain_then_recall_finds_it(client, filled):
    result = client.recall(filled, "What is the name of Alice's cat?", max_tokens=200)
    assert result.results, "nothing recalled"
    assert any("Miso" in r.text for r in result.results)
    assert result.trace is None
    traced = client.recall(
        filled,
        "Which instrument is Bob learning?",
        types=["world", "experience"],
        budget="high",
        trace=True,
        query_timestamp="2024-03-05T00:00:00",
    )
    assert any("cello" in r.text for r in traced.results)
    assert {r.type for r in traced.results} <= {"world", "experience"}
    assert traced.trace["level"] == "high" and "channels" in traced.trace
    assert str(traced.trace["now"]).startswith("2024-03-05")


def test_recall_budgets_and_max_tokens_bound_the_answer(client, filled):
    small = client.recall(filled, "Alice", max_tokens=12, budget="low")
    large = client.recall(filled, "Alice", max_tokens=2000, budget="high")
    assert len(small.results) < len(large.results)


def test_retain_fields_are_kept(client, filled):
    docs = run(client.documents.list_documents(filled))
    assert [d.id for d in docs.items] == ["chat-1"]
    doc = run(client.documents.get_document(filled, "chat-1"))
    assert doc.memory_unit_count >= 3
    assert "Alice: I adopted a grey cat named Miso" in doc.original_text
    assert doc.document_metadata["title"] == "chat with Bob"
    memories = client.list_memories(filled, limit=50)
    assert memories.total >= 3
    dated = [m for m in memories.items if "Miso" in (m.text or "")]
    assert dated and dated[0].occurred_start.startswith("2024-03-04") or dated[0].mentioned_at


def test_a_document_id_names_one_document(client, filled):
    """The same content again changes nothing; other content under the id
    replaces the document, as Hindsight does."""
    before = client.list_memories(filled).total
    items = [
        {
            "content": text,
            "timestamp": when,
            "context": "chat with Bob",
            "metadata": {"speaker": who},
        }
        for who, text, when in CONVERSATION
    ]
    assert client.retain_batch(filled, items, document_id="chat-1").success
    assert client.list_memories(filled).total == before
    client.retain(filled, "Alice sold her sailboat in April.", document_id="chat-1")
    texts = [m.text for m in client.list_memories(filled, limit=100).items]
    assert any("sailboat" in t for t in texts)
    assert not any("Miso" in t for t in texts)
    assert [d.id for d in run(client.documents.list_documents(filled)).items] == ["chat-1"]


def test_retain_async_gives_an_operation_to_poll(client, bank_id):
    client.create_bank(bank_id)
    response = client.retain(
        bank_id, "Carol moved to Lisbon in 2021.", retain_async=True, document_id="carol"
    )
    assert response.var_async and response.operation_id
    deadline = time.monotonic() + 120
    while True:
        status = run(client.operations.get_operation_status(bank_id, response.operation_id))
        if status.status in ("completed", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status.status == "completed", status.error_message
    assert any("Lisbon" in m.text for m in client.list_memories(bank_id).items)


def test_reflect_answers_from_memory(client, filled):
    answer = client.reflect(filled, "What is Alice's job?", include_facts=True)
    assert answer.text
    assert answer.based_on and any("nurse" in f.text for f in answer.based_on.memories)


def test_get_one_memory(client, filled):
    first = client.list_memories(filled, search_query="Miso").items[0]
    memory = run(client.memory.get_memory(filled, first.id))
    assert memory["text"] == first.text and "Miso" in memory["entities"]
    assert memory["source_turns"][0]["speaker"] == "Alice"
    with pytest.raises(api_error()) as error:
        run(client.memory.get_memory(filled, "no-such-memory"))
    assert error.value.status == 404


def test_list_memories_filters(client, filled):
    found = client.list_memories(filled, search_query="cello")
    assert found.total >= 1 and all("cello" in m.text.lower() for m in found.items)
    page = client.list_memories(filled, limit=1, offset=1)
    assert len(page.items) == 1 and page.offset == 1


def test_profile_disposition_and_config(client, filled):
    from hindsight_client_api.models.disposition_traits import DispositionTraits
    from hindsight_client_api.models.update_disposition_request import UpdateDispositionRequest

    updated = run(
        client.banks.update_bank_disposition(
            filled,
            UpdateDispositionRequest(
                disposition=DispositionTraits(skepticism=1, literalism=5, empathy=2)
            ),
        )
    )
    assert (updated.disposition.skepticism, updated.disposition.literalism) == (1, 5)
    config = client.get_bank_config(filled)
    assert config["config"]["disposition_literalism"] == 5
    assert config["config"]["recall.rrf_k"] == 60 and config["overrides"] == {}
    changed = client.update_bank_config(filled, disposition_empathy=4)
    assert changed["config"]["disposition_empathy"] == 4
    reset = client.reset_bank_config(filled)
    assert reset["overrides"] == {}


def test_entities_list_and_get(client, filled):
    entities = run(client.entities.list_entities(filled))
    names = {e.canonical_name: e for e in entities.items}
    assert "Miso" in names or "Riverside" in " ".join(names), names
    first = entities.items[0]
    detail = run(client.entities.get_entity(filled, first.id))
    assert detail.canonical_name == first.canonical_name
    assert detail.mention_count == first.mention_count
    with pytest.raises(api_error()) as error:
        run(client.entities.get_entity(filled, "no-such-entity"))
    assert error.value.status == 404


def test_stats(client, filled):
    stats = run(client.banks.get_agent_stats(filled))
    assert stats.total_nodes >= 3 and stats.total_documents == 1
    assert sum(stats.nodes_by_fact_type.values()) == stats.total_nodes


def test_document_delete_removes_what_was_derived_only_from_it(client, filled):
    # Bank.delete_document (issue 13): the document, its turns and its units go.
    deleted = run(client.documents.delete_document(filled, "chat-1"))
    assert deleted.success and deleted.memory_units_deleted >= 3
    assert [d.id for d in run(client.documents.list_documents(filled)).items] == []
    assert not [m for m in client.list_memories(filled, limit=50).items if "Miso" in (m.text or "")]
    with pytest.raises(api_error()) as error:
        run(client.documents.delete_document(filled, "chat-1"))
    assert error.value.status == 404


def test_what_engram_cannot_honour_is_refused(client, filled):
    with pytest.raises(api_error()) as error:
        client.retain(filled, "x", entities=[{"text": "Alice"}])
    assert error.value.status == 422 and "entities" in error.value.body
    with pytest.raises(api_error()) as error:
        client.recall(filled, "Alice", min_scores={"final": 0.5})
    assert error.value.status == 422 and "min_scores" in error.value.body
    with pytest.raises(api_error()) as error:
        client.create_mental_model(filled, "model", "what does Alice like?")
    assert error.value.status == 501 and "mental models" in error.value.body
    with pytest.raises(api_error()) as error:
        client.create_directive(filled, "be brief", "Answer briefly.")
    assert error.value.status == 501 and "directives" in error.value.body


@pytest.mark.slow
def test_wrong_token_is_refused(served, bank_id):
    with (
        hindsight(served.url, api_key="wrong") as client,
        pytest.raises(api_error()) as error,
    ):
        client.get_version()
    assert error.value.status == 401
