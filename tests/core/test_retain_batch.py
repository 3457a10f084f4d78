"""Many small documents retained in one call (an agent's turns) make the same bank
as the same documents retained one call each, and leave the indexes in agreement."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.types import Document, Turn

LINES = [
    ("Melanie", "I went to the Lakeside pottery class with Caroline yesterday."),
    ("Caroline", "It was great! I think pottery is the best way to relax."),
    ("Melanie", "My kids loved the museum in Boston last weekend."),
    ("Caroline", "I started volunteering at the LGBTQ support group in March."),
    ("Melanie", "I believe camping with the family is good for everyone."),
    ("Caroline", "Pottery really is relaxing, I agree with you."),
    ("Melanie", "We are planning a trip to Yosemite next summer."),
    ("Caroline", "The adoption agency called me back on Friday!"),
]


def _documents() -> list[Document]:
    start = datetime(2023, 5, 8, 13, 0)
    return [
        Document(
            id=f"conv:{i}",
            title=f"conv:{i}",
            turns=(Turn(id="t0", speaker=who, text=text, timestamp=start + timedelta(hours=i)),),
        )
        for i, (who, text) in enumerate(LINES)
    ]


def _picture(bank) -> dict:
    con = bank.store.reader()
    return {
        "units": sorted(
            con.execute(
                "SELECT document_id, network, text, status, coalesce(confidence, -1) FROM units"
            ).fetchall()
        ),
        "entities": sorted(r[0] for r in con.execute("SELECT name FROM entities").fetchall()),
        "links": sorted(
            con.execute(
                "SELECT a.document_id, a.text, b.document_id, b.text, l.kind, round(l.weight, 5)"
                " FROM links l JOIN units a ON a.id = l.source JOIN units b ON b.id = l.target"
            ).fetchall()
        ),
        "opinion_events": con.execute("SELECT count(*) FROM opinion_events").fetchall()[0][0],
    }


def test_a_batch_makes_the_same_bank_as_one_call_each(engine):
    one_by_one = engine.create_bank("one-by-one")
    for document in _documents():
        one_by_one.ingest(document, mode="rules")
    batched = engine.create_bank("batched")
    report = batched.ingest(_documents(), mode="rules")
    assert report.turns == len(LINES)
    assert _picture(batched) == _picture(one_by_one)
    check = batched.store.verify()
    assert check.pending == 0
    assert check.units == check.vectors == check.lexical
    assert not check.missing_vectors and not check.missing_lexical
    # What the batch wrote is searchable by words too.
    assert batched.recall("Yosemite trip", 256, count_access=False).items
