"""Over HTTP too, a snapshot that would bring back what the bank purged is
refused (409, saying so) until the call says `restore_purged=true` (issue 27,
item 14); RemoteEngine, and so the CLI routed to a server, sends it."""

from __future__ import annotations

import pytest

from core import PurgedInSnapshotError, RemoteEngine
from tests.core.test_purge_exact import _leaks, _zorblax_bank
from tests.server.conftest import TOKEN


def test_an_upload_in_place_asks_before_bringing_back_a_purge(served, http, tmp_path):
    bank, zid = _zorblax_bank(served.banks.engine)
    old = tmp_path / "before.engram"
    bank.export_snapshot(old)
    bank.purge_entity(zid, confirm=True)
    data = old.read_bytes()

    url = "/engram/v1/snapshots/import"
    r = http.post(url, params={"name": "z", "replace": "true"}, content=data)
    assert r.status_code == 409 and "purged since" in r.json()["detail"], r.text
    assert _leaks(served.banks.get("z"), "zorblax") == []

    remote = RemoteEngine(served.url, token=TOKEN)
    try:
        with pytest.raises(PurgedInSnapshotError, match="purged since"):
            remote.import_snapshot(old, "z", replace=True)
        back = remote.import_snapshot(old, "z", replace=True, restore_purged=True)
        assert back.name == "z"
    finally:
        remote.close()
    assert _leaks(served.banks.get("z"), "zorblax")
