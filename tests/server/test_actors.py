"""Two agents, each with its own named token, through the real `hindsight-client`
and the real `mcp` SDK client: every write names the agent that made it, and a
revoked token gets a 401 and leaves nothing behind."""

from __future__ import annotations

import anyio
import pytest

from core.server.token import TokenRing, add_token, revoke_token
from tests.server.conftest import TOKEN, serving

pytestmark = pytest.mark.slow  # one server and both clients for the module


@pytest.fixture(scope="module")
def agents(tmp_path_factory, embedder):
    home = tmp_path_factory.mktemp("home")
    support, sales = add_token(home, "support-bot"), add_token(home, "sales-bot")
    with serving(home, embedder, tokens=TokenRing(TOKEN, home)) as server:
        yield server, home, {"support-bot": support, "sales-bot": sales}


def hindsight(url: str, token: str):
    from hindsight_client import Hindsight

    return Hindsight(base_url=url, api_key=token, timeout=120)


def units_by_actor(server, bank_id: str) -> dict[str, set[str]]:
    bank = server.banks.get(bank_id)
    out: dict[str, set[str]] = {}
    for unit in bank.units(limit=None):
        out.setdefault(unit.created_by, set()).add(unit.text)
    return out


def test_two_agents_write_under_their_own_names(agents, bank_id):
    from hindsight_client_api.exceptions import ApiException

    server, home, tokens = agents
    with hindsight(server.url, tokens["support-bot"]) as support:
        support.create_bank(bank_id, name="Shared desk")
        support.retain(bank_id, "Dana renewed the Pro plan for the Lisbon office.")
    with hindsight(server.url, tokens["sales-bot"]) as sales:
        sales.retain(bank_id, "Oren asked for a quote on forty Enterprise seats.")
        assert any("Oren" in r.text for r in sales.recall(bank_id, "Who wants a quote?").results)
    written = units_by_actor(server, bank_id)
    assert set(written) == {"support-bot", "sales-bot"}
    assert all("Dana" in t for t in written["support-bot"])
    assert all("Oren" in t for t in written["sales-bot"])
    documents = {d.created_by for d in server.banks.get(bank_id).documents()}
    assert documents == {"support-bot", "sales-bot"}

    # A curation through Engram's API is audited under the token that asked.
    with server.client(tokens["support-bot"]) as http:
        unit = next(u for u in server.banks.get(bank_id).units() if "Oren" in u.text)
        r = http.post(f"/engram/v1/banks/{bank_id}/units/delete", json={"unit_ids": [unit.id]})
        assert r.status_code == 200, r.text
    [entry] = server.banks.get(bank_id).audit(limit=1)
    assert (entry.actor, entry.action) == ("support-bot", "delete_units")

    revoke_token(home, "sales-bot")
    before = server.banks.get(bank_id).count(status=None)
    with (
        hindsight(server.url, tokens["sales-bot"]) as sales,
        pytest.raises(ApiException) as refused,
    ):
        sales.retain(bank_id, "Oren now wants sixty seats.")
    assert refused.value.status == 401
    assert server.banks.get(bank_id).count(status=None) == before
    assert len(server.banks.get(bank_id).documents()) == 2

    # The journal says who did each, and how: read over the API, as a remote studio would.
    with server.client() as http:
        page = http.get(f"/engram/v1/banks/{bank_id}/activity").json()
    done = [(e["actor"], e["transport"], e["operation"]) for e in reversed(page["entries"])]
    assert done == [
        ("support-bot", "http", "set_profile"),
        ("support-bot", "http", "ingest"),
        ("sales-bot", "http", "ingest"),
        ("sales-bot", "http", "recall"),
        ("support-bot", "http", "delete_units"),
    ]  # and nothing of the refused retain
    recall = page["entries"][1]
    assert recall["summary"].startswith("“Who wants a quote?”") and recall["unit_ids"]
    with server.client() as http:
        mine = http.get(
            f"/engram/v1/banks/{bank_id}/activity", params={"actor": "sales-bot", "kind": "recall"}
        ).json()["entries"]
        full = http.get(f"/engram/v1/banks/{bank_id}/activity/{recall['id']}").json()["entry"]
        assert http.get(f"/engram/v1/banks/{bank_id}/activity/999").status_code == 404
    assert [e["id"] for e in mine] == [recall["id"]]
    assert full["detail"]["trace"]["query"] == "Who wants a quote?"
    assert [i["unit_id"] for i in full["detail"]["items"]] == recall["unit_ids"]


def test_an_mcp_client_is_named_after_its_token_and_itself(agents, bank_id):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    server, _home, tokens = agents
    with server.client() as http:
        http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()

    async def retain(token: str, client_name: str | None) -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        info = Implementation(name=client_name, version="1.0") if client_name else None
        async with (
            http,
            streamable_http_client(server.url + "/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write, client_info=info) as session,
        ):
            await session.initialize()
            result = await session.call_tool(
                "retain",
                {
                    "content": f"The {client_name or 'plain'} client filed ticket 4411.",
                    "bank": bank_id,
                },
            )
            assert not result.is_error, result.content

    anyio.run(retain, tokens["support-bot"], "desk-assistant")
    anyio.run(retain, TOKEN, None)
    journaled = [(e.actor, e.transport) for e in server.banks.get(bank_id).activity(kind="retain")]
    assert journaled[1] == ("support-bot (desk-assistant)", "mcp")
    assert journaled[0][0].startswith("default (") and journaled[0][1] == "mcp"
    written = units_by_actor(server, bank_id)
    assert any("desk-assistant" in t for t in written["support-bot (desk-assistant)"])
    # The SDK names itself when the agent does not: that name is the client's.
    [plain] = [a for a in written if a.startswith("default")]
    assert plain.startswith("default (") and any("plain" in t for t in written[plain])


def test_the_live_stream_sends_each_entry_as_it_is_recorded(agents, bank_id):
    import json
    import threading

    server, _home, tokens = agents
    with server.client(tokens["support-bot"]) as http:
        http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()
    heard: list[dict] = []
    ready, got = threading.Event(), threading.Event()

    def listen() -> None:
        with (
            server.client() as http,
            http.stream("GET", f"/engram/v1/banks/{bank_id}/activity/stream") as events,
        ):
            assert events.headers["content-type"].startswith("text/event-stream")
            for line in events.iter_lines():
                ready.set()
                if line.startswith("data: "):
                    heard.append(json.loads(line[6:]))
                    if len(heard) == 2:
                        got.set()
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert ready.wait(60)
    with server.client(tokens["support-bot"]) as http:  # (sales-bot's was revoked above)
        for query in ("Who renewed?", "Who asked for seats?"):
            r = http.post(f"/v1/default/banks/{bank_id}/memories/recall", json={"query": query})
            assert r.status_code == 200, r.text
    assert got.wait(60)
    listener.join(10)
    assert [(e["actor"], e["kind"]) for e in heard] == [("support-bot", "recall")] * 2
    assert heard[0]["summary"].startswith("“Who renewed?”")
    # Reconnecting after the first: the journal gives what was missed.
    with (
        server.client() as http,
        http.stream(
            "GET",
            f"/engram/v1/banks/{bank_id}/activity/stream",
            headers={"Last-Event-ID": str(heard[0]["id"])},
        ) as events,
    ):
        for line in events.iter_lines():
            if line.startswith("data: "):
                assert json.loads(line[6:])["id"] == heard[1]["id"]
                break
