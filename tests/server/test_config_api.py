"""The HTTP API reads and checks settings through the one spec (core/config.py)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_the_api_serves_the_spec_and_checks_values_by_it(http, bank_id):
    http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()
    spec = http.get("/engram/v1/config/spec").json()["settings"]
    assert spec["recall.rrf_k"]["type"] == "integer" and spec["recall.rrf_k"]["minimum"] == 0
    assert all(entry["help"] for entry in spec.values())

    url = f"/engram/v1/banks/{bank_id}/config"
    changed = http.patch(url, json={"settings": {"recall.entity_fan": "false", "recall.rrf_k": 30}})
    assert changed.status_code == 200, changed.text
    assert http.get(url).json()["config"]["recall.entity_fan"] is False
    # Stored as the key takes it, not as the body spelled it.
    stored = http.get(f"/v1/default/banks/{bank_id}/config").json()["overrides"]
    assert stored == {"recall.entity_fan": False, "recall.rrf_k": 30}

    for bad, named in (
        ({"recall.rrf_k": 60.7}, "recall.rrf_k"),
        ({"recall.activation_decay": 3}, "recall.activation_decay"),
        ({"recall.nope": 1}, "unknown setting 'recall.nope'"),
    ):
        refused = http.patch(url, json={"settings": {"recall.mu_entity": 0.1, **bad}})
        assert refused.status_code == 422 and named in refused.text, refused.text
    config = http.get(url).json()["config"]
    assert (config["recall.rrf_k"], config["recall.mu_entity"]) == (30, 0.9)  # nothing half-saved

    # Hindsight's PATCH /config goes through the same check.
    hindsight = http.patch(
        f"/v1/default/banks/{bank_id}/config", json={"updates": {"recall.rrf_k": "sixty"}}
    )
    assert hindsight.status_code == 422 and "recall.rrf_k" in hindsight.text
