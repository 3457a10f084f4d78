"""Fusion and packing: properties (hypothesis) and a few exact cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.recall.fusion import rrf
from core.recall.packing import pack, spread_sources

ids = st.text(alphabet="abcdefghij", min_size=1, max_size=3)
# Scores that a power of two between 2**-30 and 2**30 scales exactly: normal
# floats, far enough from the subnormal range (5e-324 * 0.5 rounds to 0.0 and
# ties with a zero score: hypothesis found that).
scores = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_subnormal=False).filter(
    lambda v: v == 0.0 or abs(v) >= 2.0**-990
)
channel_scores = st.dictionaries(ids, scores, max_size=25)


def rank_by_score(scores: dict[str, float]) -> list[str]:
    """Ids by raw score, highest first (ties by id): a channel's ranking."""
    return [i for i, _ in sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))]


@given(
    channels=st.lists(channel_scores, min_size=1, max_size=4),
    exponents=st.lists(st.integers(min_value=-30, max_value=30), min_size=4, max_size=4),
    k=st.integers(min_value=0, max_value=100),
)
def test_rrf_order_is_invariant_to_score_scaling(channels, exponents, k):
    named = {f"c{i}": scores for i, scores in enumerate(channels)}
    plain = rrf({name: rank_by_score(s) for name, s in named.items()}, k=k)
    # Powers of two scale exactly, so only the ranks could change — and must not.
    scaled = rrf(
        {
            name: rank_by_score({u: v * 2.0 ** exponents[i] for u, v in s.items()})
            for i, (name, s) in enumerate(named.items())
        },
        k=k,
    )
    assert [f.id for f in plain] == [f.id for f in scaled]
    assert [f.score for f in plain] == [f.score for f in scaled]


@given(
    data=st.data(),
    n=st.integers(min_value=2, max_value=5),
    k=st.integers(min_value=0, max_value=100),
)
def test_a_unit_in_every_list_outranks_one_in_fewer_at_equal_ranks(data, n, k):
    ranks = data.draw(st.lists(st.integers(1, 30), min_size=n, max_size=n, unique=True))
    m = data.draw(st.integers(min_value=1, max_value=n - 1))
    lists = []
    for i in range(n):
        filler = [f"f{i}-{j}" for j in range(31)]
        filler[ranks[i] - 1] = "A"  # A at rank r_i in list i, in every list
        if 1 <= i <= m:
            filler[ranks[i - 1] - 1] = "B"  # B at rank r_{i-1} in list i: m lists only
        lists.append(filler)
    fused = rrf({f"c{i}": lst for i, lst in enumerate(lists)}, k=k)
    order = [f.id for f in fused]
    assert order.index("A") < order.index("B")


def test_rrf_exact_scores_and_contributions():
    fused = rrf({"semantic": ["a", "b", "c"], "lexical": ["c", "a"]}, k=60)
    by_id = {f.id: f for f in fused}
    assert by_id["a"].score == pytest.approx(1 / 61 + 1 / 62)
    assert by_id["c"].score == pytest.approx(1 / 63 + 1 / 61)
    assert by_id["b"].score == pytest.approx(1 / 62)
    assert [f.id for f in fused] == ["a", "c", "b"]
    assert by_id["c"].contributions["lexical"].rank == 1
    assert "lexical" not in by_id["b"].contributions  # missing gets nothing
    assert [f.rank for f in fused] == [1, 2, 3]


def test_rrf_weights_and_duplicates():
    fused = rrf({"x": ["a", "a", "b"], "y": ["b"]}, k=0, weights={"x": 1.0, "y": 0.0})
    assert [f.id for f in fused] == ["a", "b"]  # y has no say at weight 0
    assert fused[1].contributions["x"].rank == 3  # a repeated id keeps its first place
    with pytest.raises(ValueError):
        rrf({"x": ["a"]}, k=-1)


@given(
    tokens=st.lists(st.integers(min_value=0, max_value=400), max_size=60),
    budget=st.integers(min_value=0, max_value=3000),
)
def test_packing_never_exceeds_the_budget_and_keeps_rank_order(tokens, budget):
    packed = pack(tokens, budget)
    assert packed.used == sum(tokens[i] for i in packed.taken) <= budget
    assert packed.taken == sorted(packed.taken)
    assert sorted(packed.taken + packed.skipped) == list(range(len(tokens)))
    # Greedy: a skipped item did not fit in what was left when its turn came.
    for i in packed.skipped:
        left = budget - sum(tokens[j] for j in packed.taken if j < i)
        assert tokens[i] > left


def test_packing_skips_a_long_item_and_fills_with_shorter_ones():
    packed = pack([50, 500, 40, 30], 130)
    assert packed.taken == [0, 2, 3]
    assert packed.skipped == [1]
    assert packed.used == 120
    with pytest.raises(ValueError):
        pack([-1], 10)


@settings(max_examples=50)
@given(
    sources=st.lists(st.lists(st.sampled_from("abcdef"), max_size=3), max_size=20),
    window=st.integers(min_value=0, max_value=6),
)
def test_spreading_sources_is_a_permutation(sources, window):
    order = spread_sources(sources, window)
    assert sorted(order) == list(range(len(sources)))
    if window <= 1:
        assert order == list(range(len(sources)))


def test_spreading_sources_moves_redundant_facts_down():
    order = spread_sources([["t1"], ["t1"], ["t2"], ["t3"], ["t4"]], window=2)
    assert order[:3] == [0, 2, 3]
    assert 1 in order[3:]


class _Counter:
    def __init__(self):
        self.calls = []

    def count_tokens_batch(self, texts):
        self.calls.append(list(texts))
        return [len(t.split()) for t in texts]


def test_token_counts_are_remembered_and_bounded():
    from core.recall.packing import TokenCounts

    counts = TokenCounts(size=3)
    counter = _Counter()
    assert counts.count(counter, ["a b", "c", "a b"]) == [2, 1, 2]
    assert counter.calls == [["a b", "c"]]
    assert counts.count(counter, ["c", "d e f"]) == [1, 3]
    assert counter.calls[-1] == ["d e f"]
    counts.count(counter, ["g", "h"])  # evicts the least recently used
    assert counts.count(counter, ["a b"]) == [2] and counter.calls[-1] == ["a b"]
