"""Rules-mode entity typing from context: people by what they do or how they are
taken up, tools by how they are used (made-up names throughout)."""

from __future__ import annotations

from datetime import datetime

from core.retain.entities import EntityResolver, ResolverSettings
from core.retain.extract import Exchange
from core.retain.rules import RulesExtractor
from core.store.bank_store import utcnow
from core.types import Document, Turn

SESSION = datetime(2024, 3, 4, 9, 30)


def typed(*turns: tuple[str, str]) -> dict[str, str]:
    """Every non-speaker name of the exchange with its type (the last one seen)."""
    exchange = Exchange(
        tuple(
            Turn(f"t{i}", speaker, text, SESSION, "s1", i)
            for i, (speaker, text) in enumerate(turns)
        ),
        "s1",
    )
    speakers = {speaker for speaker, _ in turns}
    out: dict[str, str] = {}
    for mentions in RulesExtractor().mentions(exchange, "", []).values():
        for mention in mentions:
            if mention.name not in speakers:
                out[mention.name] = mention.type
    return out


def test_a_full_name_with_a_role_in_apposition_is_a_person() -> None:
    got = typed(("Wren", "The client signed; Corin Vasquez, their VP of Sales, approved it."))
    assert got["Corin Vasquez"] == "person"


def test_a_full_name_taken_up_by_her_or_his_is_a_person() -> None:
    got = typed(("Wren", "I invited Corin Vasquez and two of her analysts to the channel."))
    assert got["Corin Vasquez"] == "person"


def test_a_name_that_speaks_or_writes_is_a_person() -> None:
    assert typed(("Wren", "Yesterday Corin said the numbers match."))["Corin"] == "person"
    assert typed(("Wren", "Later Corin finally replied to the thread."))["Corin"] == "person"


def test_person_context_does_not_make_acronyms_or_objects_persons() -> None:
    # "his" right after a name can be someone else's; acronyms are not people.
    got = typed(("Wren", "I sent Oskarline his start date yesterday and HR said fine."))
    assert got.get("Oskarline", "other") == "other"
    assert got.get("HR", "other") == "other"
    # A new clause's subject pronoun may be anyone.
    got = typed(("Wren", "I really love Crafternoons, and I know she does too."))
    assert got.get("Crafternoons", "other") == "other"


def test_a_tool_used_in_the_exchange_is_a_product_not_a_place() -> None:
    got = typed(
        ("Wren", "I shared the Quillboard file with everyone yesterday."),
        ("Tam", "Great, I will leave my comments in Quillboard tonight."),
    )
    assert got["Quillboard"] == "product"
    assert typed(("Wren", "We use Quillboard for the mockups now."))["Quillboard"] == "product"


def test_a_place_stays_a_place() -> None:
    got = typed(("Wren", "I moved to Lisbon last year and we hiked near Brightwater Lake."))
    assert got["Lisbon"] == "place"
    assert got["Brightwater Lake"] == "place"
    # A preposition alone still says place when nothing says tool.
    assert typed(("Wren", "We spent a week in Vellmora with friends."))["Vellmora"] == "place"


def test_a_place_shown_later_to_be_a_tool_becomes_a_product(bank) -> None:
    """Whichever mention came first: across documents, and within one (the resolver's
    cache of a surface)."""
    first = Document(
        id="",
        title="april",
        turns=(Turn("a0", "Wren", "Leave your comments in Quillboard tonight.", SESSION, "s1", 0),),
    )
    bank.ingest(first, mode="rules")
    assert {e.name: e.type for e in bank.entities()}["Quillboard"] == "place"
    later = Document(
        id="",
        title="may",
        turns=(Turn("b0", "Tam", "I shared the Quillboard file with the team.", SESSION, "s1", 0),),
    )
    bank.ingest(later, mode="rules")
    types = {e.name: e.type for e in bank.entities()}
    assert types["Quillboard"] == "product"
    assert types["Wren"] == types["Tam"] == "person"
    resolver = EntityResolver(
        bank.store.reader(), ResolverSettings.from_config(bank.config), now=utcnow()
    )
    slate = resolver.resolve("Slatewise", "place", (), [SESSION])
    assert resolver.resolve("Slatewise", "product", (), [SESSION]) == slate
    with bank.store.transaction() as tx:
        resolver.write(tx.con)
    assert {e.name: e.type for e in bank.entities()}["Slatewise"] == "product"
