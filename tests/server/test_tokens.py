"""Named API tokens: made, listed, revoked, stored hashed, and told apart by a server."""

from __future__ import annotations

import json
import stat

import pytest

from core.cli import main as cli
from core.context import CLI, MCP_STDIO, Caller, hop_header, parse_hop
from core.server.guard import caller_of
from core.server.token import (
    ENV,
    TokenError,
    TokenRing,
    add_token,
    api_token,
    list_tokens,
    named_file,
    revoke_token,
)


def test_tokens_are_named_hashed_and_revoked(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    default = api_token(tmp_path)
    ring = TokenRing(default, tmp_path)
    bot = add_token(tmp_path, "support-bot")
    other = add_token(tmp_path, "sales.bot_2")
    stored = named_file(tmp_path).read_text("utf-8")
    # Only hashes are kept, in a file only its owner reads.
    assert bot not in stored and other not in stored and default not in stored
    assert stat.S_IMODE(named_file(tmp_path).stat().st_mode) == 0o600
    assert [t.name for t in list_tokens(tmp_path)] == ["default", "support-bot", "sales.bot_2"]
    assert ring.identify(f"Bearer {bot}") == "support-bot"
    assert ring.identify(f"bearer {other}") == "sales.bot_2"
    assert ring.identify(f"Bearer {default}") == "default"
    for wrong in (None, "", "Bearer", f"Basic {bot}", f"Bearer {bot}x", "Bearer  "):
        assert ring.identify(wrong) is None
    revoke_token(tmp_path, "support-bot")
    # A running server re-reads the file: refused from the next request on.
    assert ring.identify(f"Bearer {bot}") is None
    assert ring.identify(f"Bearer {other}") == "sales.bot_2"
    with pytest.raises(TokenError, match="no token named"):
        revoke_token(tmp_path, "support-bot")
    with pytest.raises(TokenError, match="cannot be revoked"):
        revoke_token(tmp_path, "default")
    with pytest.raises(TokenError, match="exists"):
        add_token(tmp_path, "sales.bot_2")
    for bad in ("default", "", "-x", "a b", "x" * 41, "bot\n", "bøt"):
        with pytest.raises(TokenError):
            add_token(tmp_path, bad)


def test_a_damaged_token_file_admits_no_named_token(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    ring = TokenRing.for_home(tmp_path)
    bot = add_token(tmp_path, "bot")
    named_file(tmp_path).write_text("{not json", "utf-8")
    assert ring.identify(f"Bearer {bot}") is None
    assert ring.identify(f"Bearer {api_token(tmp_path)}") == "default"
    with pytest.raises(TokenError, match="cannot be read"):
        list_tokens(tmp_path)
    named_file(tmp_path).write_text(json.dumps({"tokens": "nope"}), "utf-8")
    with pytest.raises(TokenError, match="no token list"):
        add_token(tmp_path, "bot2")


def test_engram_tokens_commands(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    home = ["--home", str(tmp_path)]
    assert cli([*home, "tokens", "add", "support-bot"]) == 0
    printed = capsys.readouterr()
    secret = printed.out.strip()
    assert TokenRing.for_home(tmp_path).identify(f"Bearer {secret}") == "support-bot"
    assert "shown only this once" in printed.err
    assert cli([*home, "tokens", "list"]) == 0
    listed = capsys.readouterr().out
    assert "support-bot" in listed and "default" in listed and secret not in listed
    assert cli([*home, "tokens", "add", "support-bot"]) == 1
    assert "exists" in capsys.readouterr().err
    assert cli([*home, "tokens", "revoke", "support-bot"]) == 0
    assert "revoked" in capsys.readouterr().out
    assert cli([*home, "tokens", "list", "--json"]) == 0
    assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["default"]


def test_tokens_are_made_and_revoked_without_fcntl(tmp_path, monkeypatch):
    """Windows has no fcntl module: the token file's lock is filelock's (msvcrt
    there), as the bank's and the names' locks are."""
    import sys

    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setitem(sys.modules, "fcntl", None)  # `import fcntl` raises ImportError
    bot = add_token(tmp_path, "bot")
    assert TokenRing.for_home(tmp_path).identify(f"Bearer {bot}") == "bot"
    revoke_token(tmp_path, "bot")
    assert [t.name for t in list_tokens(tmp_path)] == ["default"]


def test_the_caller_of_a_request():
    headers = {b"authorization": b"Bearer x"}
    assert caller_of("support-bot", "/v1/default/banks", headers) == Caller("support-bot", "http")
    assert caller_of("support-bot", "/mcp", headers) == Caller("support-bot", "mcp")
    # A local tool with the data folder's own token says which tool it is...
    hop = {**headers, b"x-engram-caller": hop_header(Caller("nightly tidy ✓", CLI)).encode()}
    assert caller_of("default", "/engram/v1/banks/b/call/undo", hop) == Caller(
        "nightly tidy ✓", CLI
    )
    # ...a named token cannot pass itself off as another.
    assert caller_of("support-bot", "/engram/v1/banks/b/call/undo", hop).actor == "support-bot"
    assert parse_hop("http; admin") is None  # only the local tools' transports
    assert parse_hop(f"{MCP_STDIO}; a\x00b") == Caller("a b", MCP_STDIO)
    assert Caller("bot", "mcp").with_client("claude-code\n") == Caller("bot (claude-code)", "mcp")
    assert Caller("bot", "mcp").with_client("") == Caller("bot", "mcp")


@pytest.mark.slow  # two servers, one after the other, on a real bank
def test_a_queued_retain_runs_as_who_asked_after_a_restart(tmp_path, embedder):
    """An `"async": true` retain is kept in the bank's queue with its request; the
    server that runs it (the next one, here) writes it under the token that asked."""
    import threading

    from core import Engine
    from tests.server.conftest import TOKEN, serving
    from tests.server.test_retain_durability import wait_until

    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("desk")
    bot = add_token(home, "support-bot")
    item = {"content": "Dana renewed the Pro plan.", "document_id": "t1", "strategy": "verbatim"}
    body = {"items": [item]}
    with serving(home, embedder, headless=True, mcp=False, tokens=TokenRing(TOKEN, home)) as s:
        lock = s.banks.lock(s.banks.key_of("desk"))
        lock.acquire()  # the queue cannot move: the retain stays queued when it stops
        try:
            with s.client(bot) as http:
                r = http.post("/v1/default/banks/desk/memories", json={**body, "async": True})
                r.raise_for_status()
                op = r.json()["operation_id"]
            stopper = threading.Thread(target=s.handle.stop)
            stopper.start()
            operations = s.handle._server.config.app.state.operations
            wait_until(lambda: operations._closed)
        finally:
            lock.release()
        stopper.join()
    with serving(home, embedder, headless=True, mcp=False, tokens=TokenRing(TOKEN, home)) as s:
        with s.client() as http:
            url = f"/v1/default/banks/desk/operations/{op}"
            wait_until(lambda: http.get(url).json()["status"] == "completed")
        bank = s.banks.get("desk")
        [unit] = [u for u in bank.units(limit=None) if u.document_id == "t1"]  # (+ observations)
        assert (unit.text, unit.created_by) == ("Dana renewed the Pro plan.", "support-bot")
        assert [d.created_by for d in bank.documents()] == ["support-bot"]
        # (run once, or again by the second server when the first stopped mid-way)
        retains = bank.activity(kind="retain", operation="ingest")
        assert retains and {(e.actor, e.transport) for e in retains} == {("support-bot", "http")}
