"""Packing: fit the best facts into a token budget.

Greedy in rank order: each item is taken if it still fits in what is left of
the budget. An item that does not fit is *skipped*, not a stop: packing goes
on down the list, so a long fact near the top cannot waste the rest of the
budget and shorter, lower-ranked facts still fill it. The result never exceeds
the budget and keeps the rank order of what it took.

Token counts come from the embedding model's tokenizer (the same one that
measures the unit when it is embedded), never from a downloaded tokenizer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Packed:
    taken: list[int] = field(default_factory=list)  # indices into the ranked list, in order
    skipped: list[int] = field(default_factory=list)  # considered, did not fit
    used: int = 0
    budget: int = 0

    @property
    def left(self) -> int:
        return self.budget - self.used


def pack(tokens: Sequence[int], budget: int, limits: Sequence[int | None] | None = None) -> Packed:
    """Greedy packing of items (given by token counts, best first) into `budget`.

    `limits` (per item, None for none): an item longer than its limit is
    skipped whatever is left — its fair share of the budget."""
    result = Packed(budget=max(int(budget), 0))
    for index, count in enumerate(tokens):
        if count < 0:
            raise ValueError(f"a token count cannot be negative (item {index}: {count})")
        limit = limits[index] if limits is not None else None
        if count <= result.left and (limit is None or count <= limit):
            result.taken.append(index)
            result.used += count
        else:
            result.skipped.append(index)
    return result


def spread_sources(source_sets: Sequence[Sequence[str]], window: int) -> list[int]:
    """A reordering (indices) of a ranked list that moves each fact whose source
    turns are all covered by better-ranked facts down by `window` places, so
    facts bringing new turns come first. Nothing is dropped; with window <= 1
    it is the identity.

    Why: a budget spent on three rewordings of one turn answers less than one
    spent on three turns."""
    order = list(range(len(source_sets)))
    if window <= 1:
        return order
    covered: set[str] = set()
    result: list[int] = []
    deferred: list[tuple[int, int]] = []  # (index, len(result) when it was deferred)
    for index in order:
        sources = set(source_sets[index])
        if sources and sources <= covered:
            deferred.append((index, len(result)))
        else:
            result.append(index)
            covered |= sources
        while deferred and len(result) - deferred[0][1] >= window:
            result.append(deferred.pop(0)[0])
    return result + [index for index, _ in deferred]


class TokenCounts:
    """Token counts by text, remembered (LRU): the same facts come back recall
    after recall, and tokenising a few hundred of them each time is most of the
    packing stage."""

    def __init__(self, size: int = 100_000) -> None:
        self._size = size
        self._counts: OrderedDict[tuple[int, str], int] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, embedder, texts: Sequence[str]) -> list[int]:
        key = id(embedder)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if (key, t) not in self._counts]
        counted = dict(zip(missing, embedder.count_tokens_batch(missing), strict=True))
        with self._lock:
            out = []
            for text in texts:
                n = counted.get(text)
                if n is None:
                    n = self._counts[(key, text)]
                    self._counts.move_to_end((key, text))
                else:
                    self._counts[(key, text)] = n
                out.append(n)
            while len(self._counts) > self._size:
                self._counts.popitem(last=False)
        return out


TOKEN_COUNTS = TokenCounts()
