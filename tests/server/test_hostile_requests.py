"""The hostile-request corpus (tests/data/hostile/requests.py) over HTTP: each
request is a 4xx naming the field, never a 500, and the bank is exactly as it
was (issue 27, items 4 and 9). MCP's share is in test_hostile_mcp.py."""

from __future__ import annotations

import json

import pytest

from tests.data.hostile import requests as corpus
from tests.support.curation import dump


@pytest.fixture(scope="module")
def target(served):
    """One bank with one fact, shared by the corpus (every case must leave it be)."""
    name = "hostile-target"
    with served.client() as http:
        http.put(f"/v1/default/banks/{name}", json={}).raise_for_status()
        http.post(
            f"/v1/default/banks/{name}/memories",
            json={"items": [{"content": "Ann keeps bees.", "strategy": "verbatim"}]},
        ).raise_for_status()
    return name


def _named(answer: dict, name: str) -> bool:
    detail = answer.get("detail")
    if isinstance(detail, list):
        return any(
            name in ".".join(map(str, d.get("loc", []))) or name in str(d.get("msg", ""))
            for d in detail
        )
    return name in str(detail)


@pytest.mark.parametrize("case", sorted(corpus.HTTP))
def test_hostile_request_is_refused_naming_the_field(served, http, target, case):
    attack = corpus.HTTP[case]
    bank = served.banks.get(target)
    before = dump(bank)
    r = http.request(
        attack.method,
        attack.path.format(bank=target),
        content=attack.body,
        params=attack.params,
        headers={"content-type": "application/json"} if attack.body is not None else {},
    )
    assert r.status_code == attack.status, (case, r.status_code, r.text[:300])
    answer = r.json()
    assert _named(answer, attack.names), (case, json.dumps(answer)[:300])
    # An answer that echoed the input back would carry the megabyte (or the surrogate).
    assert len(r.content) < 4000, (case, len(r.content))
    assert dump(bank) == before, case
    assert http.get("/health").status_code == 200

