"""A bank recorded with another embedding model is re-embedded on request
(`engram repair BANK --re-embed`), with progress, all or nothing."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from core import CancelledError, CancelToken, EmbeddingMismatchError, Engine, Kind, NewUnit
from core.cli import main
from core.store.bank_store import DB_NAME

TEXTS = [
    "Maya moved to the Lisbon office in March.",
    "The Atlas reporting platform ships in June.",
    "Tomás prefers written reviews to meetings.",
    "Leo starts his internship in Berlin.",
    "Priya sketched the first Atlas dashboard.",
]
OLD_MODEL, OLD_DIM = "example/old-model", 8


def make_old_bank(engine: Engine, embedder) -> list[str]:
    """A bank whose stores say its vectors came from an 8-dimensional other model
    (as a bank made by an engine with another embedder would be)."""
    bank = engine.create_bank("Old")
    vectors = embedder.embed(TEXTS)
    bank.add_units(
        [NewUnit(text=t, vector=tuple(v.tolist())) for t, v in zip(TEXTS, vectors, strict=True)]
    )
    ids = [u.id for u in bank.units(limit=100)]
    folder = bank.folder
    bank.close()
    rng = np.random.default_rng(0)
    with duckdb.connect(str(folder / DB_NAME)) as con:
        con.execute(
            "UPDATE meta SET value = ? WHERE key = 'embedding'",
            [json.dumps({"model": OLD_MODEL, "dim": OLD_DIM})],
        )
        for unit_id in ids:
            con.execute(
                "UPDATE units SET vector = ?, embedding_model = ? WHERE id = ?",
                [rng.standard_normal(OLD_DIM).astype(np.float32).tolist(), OLD_MODEL, unit_id],
            )
    return ids


def stored(engine: Engine) -> tuple[dict, dict[str, str]]:
    folder = engine._find("Old")
    with duckdb.connect(str(folder / DB_NAME), read_only=True) as con:
        meta = json.loads(con.execute("SELECT value FROM meta WHERE key='embedding'").fetchone()[0])
        models = dict(con.execute("SELECT id, embedding_model FROM units").fetchall())
    return meta, models


def test_a_bank_of_another_model_is_refused_with_the_command_that_re_embeds_it(engine, embedder):
    make_old_bank(engine, embedder)
    with pytest.raises(EmbeddingMismatchError, match=r"engram repair 'Old' --re-embed"):
        engine.open_bank("Old")


@pytest.mark.slow
def test_re_embedding_gives_every_unit_a_vector_of_this_model(engine, embedder):
    ids = make_old_bank(engine, embedder)
    seen: list[tuple[int, int]] = []
    change = engine.reembed_bank("Old", lambda done, total, _message: seen.append((done, total)))
    assert change.ids(Kind.UNIT) == set(ids)
    assert seen[-1] == (len(ids), len(ids))
    meta, models = stored(engine)
    assert meta == {"model": embedder.name, "dim": embedder.dim}
    assert set(models.values()) == {embedder.name}
    bank = engine.open_bank("Old")
    assert bank.store.dim == embedder.dim and bank.verify().ok
    # Vector search works again with the real model: each text finds its own unit first.
    for text in TEXTS:
        hit = bank.store.vectors.search(embedder.embed_one(text), k=1)[0]
        assert bank.unit(hit.id).text == text
    # Opened by this engine, it is recorded with its model: nothing more to do.
    assert engine.reembed_bank("Old").empty


def test_a_cancelled_re_embedding_leaves_the_bank_as_it_was(engine, embedder):
    make_old_bank(engine, embedder)
    before = stored(engine)
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(CancelledError):
        engine.reembed_bank("Old", cancel=cancel)
    assert stored(engine) == before
    with pytest.raises(EmbeddingMismatchError):
        engine.open_bank("Old")


@pytest.mark.slow
def test_engram_repair_re_embed(tmp_path, embedder, capsys):
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        ids = make_old_bank(engine, embedder)
    assert main(["--home", str(home), "repair", "Old", "--re-embed"]) == 0
    out = capsys.readouterr().out
    assert f"re-embedded {len(ids)} units with {embedder.name}" in out
    assert "OK: the three stores agree" in out
