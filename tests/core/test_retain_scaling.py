"""Retain's cost is linear in an item's length (issue 27, item 5).

One message of 1,000 sentences cost 21.8 CPU s and one of 4,000 cost 233.5:
the extractor read the whole exchange for every fact, and one long message was
one exchange. A long turn is extracted in pieces now (`pieces_of`), so four
times the text costs about four times the CPU.

Measured in CPU time of this process (every thread's, the embedder's too),
never wall time: a busy machine slows both sizes alike. Rules mode with the
hash embedder, so what is measured is retain's own work.
"""

from __future__ import annotations

import random
import time

import pytest

from core import Engine
from core.retain.extract import PIECE_CHARS, chunk_exchanges, pieces_of
from core.types import Document, Turn
from tests.support.embedders import HashEmbedder

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"]
PLACES = ["Lisbon", "Paris", "Berlin", "Oslo", "Madrid", "Rome"]
THINGS = ["the violin", "a bicycle", "the garden", "her thesis", "the kettle", "a new job"]


def long_message(sentences: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(
        f"{rng.choice(NAMES)} talked about {rng.choice(THINGS)} in {rng.choice(PLACES)}"
        f" on day {i}."
        for i in range(sentences)
    )


def test_a_long_turn_is_cut_at_sentences_into_pieces_that_keep_all_of_it():
    turn = Turn("t0", "Ann", long_message(300, 1))
    pieces = pieces_of(turn)
    assert len(pieces) > 1 and all(len(p.text) <= PIECE_CHARS for p in pieces)
    assert " ".join(p.text for p in pieces) == turn.text
    assert all(p.text.endswith(".") and p.id == "t0" and p.speaker == "Ann" for p in pieces)
    # No sentence end: cut at spaces; no space: cut anywhere. Nothing is lost.
    for text in ("word " * 2000, "x" * 5000):
        cut = pieces_of(Turn("t1", "Ann", text))
        assert all(len(p.text) <= PIECE_CHARS for p in cut)
        assert "".join(p.text for p in cut).replace(" ", "") == text.replace(" ", "")
    exchanges = chunk_exchanges(Document("d", "d", (Turn("q", "Bob", "Why?"), turn)))
    assert [e.turn_ids for e in exchanges] == [("q",)] + [("t0",)] * len(pieces)


@pytest.mark.slow
def test_four_times_the_text_costs_less_than_five_times_the_cpu(tmp_path):
    with Engine(tmp_path, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("long")
        bank.ingest([Document("w", "warm-up", (Turn("w", "Ann", long_message(20, 0)),))])
        cpu = {}
        for sentences in (250, 1000):
            text = long_message(sentences, sentences)
            document = Document(f"d{sentences}", "long", (Turn("t0", "Ann", text),))
            started = time.process_time()
            report = bank.ingest([document], mode="rules")
            cpu[sentences] = time.process_time() - started
            assert sum(report.facts.values()) >= sentences * 0.9  # a fact per sentence
        assert cpu[1000] / cpu[250] < 5, cpu
