"""docs/openapi.json is what the server serves, so the checked-in document
cannot drift from the code. Regenerate it with
`python -m core.server.openapi > docs/openapi.json`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from core import Engine
from core.server import ServedBanks, start_server
from core.server.openapi import render

CHECKED_IN = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


@pytest.mark.slow
def test_the_checked_in_document_is_the_served_one(tmp_path):
    with Engine(tmp_path) as engine:
        handle = start_server(ServedBanks(engine, open_on_demand=True), "127.0.0.1", 0, "t" * 20)
        try:
            served = httpx.get(
                handle.url + "/openapi.json",
                headers={"Authorization": "Bearer " + "t" * 20},
                timeout=120,
            ).json()
        finally:
            handle.stop()
    assert CHECKED_IN.read_text("utf-8") == render(served), (
        "docs/openapi.json is stale: python -m core.server.openapi > docs/openapi.json"
    )
    document = json.loads(CHECKED_IN.read_text("utf-8"))
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path in (
        "/v1/default/banks/{bank_id}/memories",
        "/v1/default/banks/{bank_id}/memories/recall",
        "/engram/v1/banks/{bank_id}/recall",
        "/engram/v1/snapshots/import",
    ):
        assert path in document["paths"]
