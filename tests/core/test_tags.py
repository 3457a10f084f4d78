"""Tags and metadata (core/tags.py, core/store/tagged.py): what a tag scope lets
through, the same in SQL and in Python, kept on turns and units, and applied
before retrieval in every recall channel."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import tags as tagging
from core.types import Document, InvalidInputError, Network, Turn

TAGS = ("a", "b", "c")
tag_sets = st.lists(st.sampled_from(TAGS), unique=True, max_size=3)
leaves = st.builds(
    tagging.TagFilter,
    st.lists(st.sampled_from(TAGS), unique=True, max_size=3).map(tuple),
    st.sampled_from(tagging.TAG_MATCHES),
)
scopes = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.builds(lambda p: tagging.TagGroup("not", (p,)), inner),
        st.builds(
            lambda op, ps: tagging.TagGroup(op, tuple(ps)),
            st.sampled_from(("and", "or")),
            st.lists(inner, min_size=1, max_size=3),
        ),
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module")
def table():
    """Every subset of the tags, one row each."""
    con = duckdb.connect()
    con.execute("CREATE TABLE u (id INTEGER, tags VARCHAR[])")
    subsets = [[t for i, t in enumerate(TAGS) if mask >> i & 1] for mask in range(8)]
    con.executemany("INSERT INTO u VALUES (?, ?)", list(enumerate(subsets)))
    con.execute("INSERT INTO u VALUES (8, NULL)")  # a row from before tags existed
    return con, [*subsets, []]


@settings(max_examples=150, deadline=None)
@given(scope=scopes)
def test_sql_and_python_agree_on_every_scope(table, scope):
    con, subsets = table
    condition, params = tagging.sql(scope, "u.tags")
    rows = {r[0] for r in con.execute(f"SELECT id FROM u WHERE {condition}", params).fetchall()}
    assert rows == {i for i, tags in enumerate(subsets) if tagging.matches(tags, scope)}


@pytest.mark.parametrize(
    ("tags", "match", "passing"),
    [
        # Hindsight's five modes over {a}, {a, b}, {c} and an untagged unit.
        (("a",), "any", {"A", "AB", "-"}),
        (("a", "b"), "all", {"AB", "-"}),
        (("a", "c"), "any_strict", {"A", "AB", "C"}),
        (("a", "b"), "all_strict", {"AB"}),
        (("a",), "exact", {"A"}),
        ((), "exact", {"-"}),
        ((), "any_strict", {"A", "AB", "C", "-"}),  # no tags: no filter
    ],
)
def test_the_five_modes(tags, match, passing):
    units = {"A": ("a",), "AB": ("a", "b"), "C": ("c",), "-": ()}
    scope = tagging.TagFilter(tags, match)
    assert {k for k, v in units.items() if tagging.matches(v, scope)} == passing


def test_tag_groups_from_hindsight_json():
    scope = tagging.group_from_json(
        {"and": [{"tags": ["a"], "match": "any_strict"}, {"not": {"tags": ["b"]}}]}
    )
    assert tagging.matches(("a",), scope) and not tagging.matches(("a", "b"), scope)
    with pytest.raises(InvalidInputError, match="fuzzy"):
        tagging.group_from_json({"tags": ["a"], "resolve": "fuzzy"})
    with pytest.raises(InvalidInputError, match="unknown keys"):
        tagging.group_from_json({"tags": ["a"], "mode": "x"})


def test_tags_and_metadata_are_checked():
    assert tagging.check_tags(["a", "a", "b"]) == ("a", "b")
    assert tagging.check_tags('["x", "y"]') == ("x", "y")  # an MCP bridge's string
    assert tagging.check_tags("solo") == ("solo",)
    for bad, why in [
        (["x" * 201], "over 200"),
        ([""], "empty"),
        ([1], "string"),
        (["\ud800"], "surrogate"),
        ([f"t{i}" for i in range(101)], "limit of 100"),
    ]:
        with pytest.raises(InvalidInputError, match=why):
            tagging.check_tags(bad)
    assert tagging.check_metadata({"source": "crewai"}) == {"source": "crewai"}
    for bad, why in [
        ({"k": 1}, "strings"),
        ({"k": "v" * 10_001}, "over 10,000"),
        ({"": "v"}, "non-empty"),
        ({f"k{i}": "v" for i in range(101)}, "limit of 100"),
        (["k"], "object"),
    ]:
        with pytest.raises(InvalidInputError, match=why):
            tagging.check_metadata(bad)


def _doc(doc_id: str, text: str, tags=(), metadata=None, speaker="") -> Document:
    turn = Turn("t0", speaker, text, tags=tuple(tags), metadata=metadata or {})
    return Document(id=doc_id, title=doc_id, turns=(turn,))


def test_units_keep_their_turns_tags_and_metadata(bank):
    bank.ingest(
        [_doc("d1", "Kim moved to Oslo.", ["user:kim"], {"source": "chat"})], mode="verbatim"
    )
    (unit,) = bank.units(limit=None)
    assert unit.tags == ("user:kim",) and unit.metadata == {"source": "chat"}
    assert unit.document_id == "d1"
    (document,) = bank.documents()
    assert document.tags == ("user:kim",) and document.metadata == {"source": "chat"}
    assert document.text_length == len("Kim moved to Oslo.")
    assert bank.tag_counts() == ([("user:kim", 1)], 1)


@pytest.mark.slow
def test_a_tag_scope_filters_before_retrieval_not_after(bank):
    """Forty untagged facts about the query's subject and two tagged ones about
    something else: with `low` (20 candidates per channel) a filter after
    retrieval would find no tagged fact at all; before it, both come back."""
    people = ["Ada", "Ben", "Cho", "Dev", "Eli", "Fay", "Gus", "Hal"]
    drinks = ["espresso", "latte", "cappuccino", "flat white", "mocha"]
    near = [
        f"{who} orders a {drink} from the office coffee machine on floor {i}."
        for i, (who, drink) in enumerate((p, d) for p in people for d in drinks)
    ]
    far = ["Ruth planted tulips along the garden fence.", "Ruth's tomatoes ripened early."]
    turns = [Turn(f"t{i}", "", text, index=i) for i, text in enumerate(near)]
    turns += [
        Turn(f"r{i}", "", text, index=len(near) + i, tags=("user:ruth",))
        for i, text in enumerate(far)
    ]
    bank.ingest(Document(id="office", title="office", turns=tuple(turns)), mode="verbatim")
    assert bank.count() >= 30, "the near facts merged as duplicates"
    scope = tagging.TagFilter(("user:ruth",), "any_strict")
    result = bank.recall("office espresso coffee machine", 4000, level="low", tags=scope)
    assert {i.text for i in result.items} == set(far)
    assert any("tag scope any_strict [user:ruth]" in n for n in result.trace.notes)
    for name, channel in result.trace.channels.items():
        assert set(channel.ids) <= {u.id for u in bank.units(tags=scope, limit=None)}, name
    unscoped = bank.recall("office espresso coffee machine", 4000, level="low")
    assert not {i.text for i in unscoped.items} & set(far)


@pytest.mark.slow
def test_an_observation_passes_only_when_all_its_facts_do(bank):
    bank.ingest(
        [
            _doc("a", "The office moved to Vienna in May.", ["user:a"]),
            _doc("b", "The jazz festival in Vienna sold out.", ["user:b"]),
        ],
        mode="verbatim",
    )
    bank.process_jobs()
    observations = bank.units(Network.OBSERVATION, limit=None)
    assert observations, "no observation was made"
    vienna = next(o for o in observations if "Vienna" in o.text)
    sources = bank.units_by_id(bank.observation_sources([vienna.id])[vienna.id])
    assert {u.tags for u in sources.values()} == {("user:a",), ("user:b",)}
    assert set(vienna.tags) == {"user:a", "user:b"}  # shown: the union of its facts'
    only_a = tagging.TagFilter(("user:a",), "any_strict")
    both = tagging.TagFilter(("user:a", "user:b"), "any_strict")
    assert vienna.id not in {u.id for u in bank.units(tags=only_a, limit=None)}
    assert vienna.id in {u.id for u in bank.units(tags=both, limit=None)}
