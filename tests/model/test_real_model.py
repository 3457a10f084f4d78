"""The model path on a real model (`make test-model`; never part of `make test`).

A GGUF model from registry packages answers through llama.cpp behind the
Ollama protocol (llama_server.py). Engram's llm mode runs end to end on it:
the demo conversations ingested, observations rebuilt, a reflection, a
comparison. The check fails on a crash, a half-write (the bank does not
verify; a failure not stored; a partial document not shown as partial) or a
chunk dropped without a word (it states something, yet no fact, failure or
recorded drop covers it). What the model got wrong is *reported*, not
failed: a 0.5B model is weak, and the point is that its weakness shows.
"""

from __future__ import annotations

import json
import os

import ollama
import pytest

from core import Disposition, Engine, EngineSettings, load_documents
from core.providers.embedder import shared_embedder
from core.retain.extract import chunk_exchanges
from core.retain.statements import split_turn
from tests.model.conftest import demo_files, demo_profile, demo_queries

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["city", "count"],
}


def test_the_server_speaks_ollama_to_the_official_client(llama_server, model_name) -> None:
    client = ollama.Client(host=llama_server.url, timeout=600)
    names = [m.model for m in client.list().models]
    assert model_name in names
    show = client.show(model_name)
    context = [v for k, v in show.modelinfo.items() if k.endswith(".context_length")]
    assert context and context[0] >= 2048 and "completion" in show.capabilities
    asked = dict(
        model=model_name,
        messages=[{"role": "user", "content": "Lisbon has 3 trams. Answer as JSON."}],
        format=SCHEMA,
        options={"temperature": 0.7, "seed": 7, "num_predict": 64, "num_ctx": 2048},
    )
    parts = list(client.chat(**asked, stream=True))
    assert len(parts) > 2 and parts[-1].done and parts[-1].done_reason in ("stop", "length")
    first = "".join(p.message.content for p in parts)
    assert set(json.loads(first)) == {"city", "count"}
    # The same seed, the same answer.
    assert client.chat(**asked, stream=False).message.content == first
    cut = client.chat(**{**asked, "options": {**asked["options"], "num_predict": 3}})
    assert cut.done_reason == "length"
    with pytest.raises(ollama.ResponseError) as missing:
        client.chat(model="nope:1b", messages=asked["messages"])
    assert missing.value.status_code == 404 and "not found" in missing.value.error
    with pytest.raises(ollama.ResponseError) as think:
        client.chat(model=model_name, messages=asked["messages"], think=True)
    assert think.value.status_code == 400 and "does not support thinking" in think.value.error


def _memorable(turns) -> bool:
    names = frozenset(w.casefold() for t in turns for w in t.speaker.split())
    return any(split_turn(t.text, names).statements for t in turns)


@pytest.fixture(scope="module")
def engine(tmp_path_factory, llama_server, model_name):
    home = tmp_path_factory.mktemp("home")
    with Engine(home, embedder=shared_embedder()) as engine:
        engine.set_settings(
            EngineSettings(
                ollama_host=llama_server.url,
                ollama_model=model_name,
                ollama_timeout=float(os.environ.get("ENGRAM_TEST_MODEL_TIMEOUT", "120")),
            )
        )
        yield engine


@pytest.fixture(scope="module")
def ingested(engine):
    label = demo_profile()
    bank = engine.create_bank("demo", agent_name=label["agent_name"])
    bank.set_profile(disposition=Disposition.from_dict(label["disposition"]))
    reports = {}
    for path in demo_files():
        reports[path] = bank.ingest(path, mode="llm")
        print(f"\n== {path.name}\n{reports[path].summary()}")
    return bank, reports


def test_llm_ingest_writes_whole_chunks_or_says_why(ingested) -> None:
    bank, reports = ingested
    assert bank.verify().ok
    sources = {s for u in bank.units(limit=None) for s in u.source_ids}
    listed = {d.id: d for d in bank.documents()}
    silent: list[str] = []
    for path, report in reports.items():
        assert report.mode == "llm"
        [document] = load_documents(path)
        [result] = report.documents
        failed = {t for f in report.failures for t in f.turn_ids}
        recorded = {t for c in report.checked if c.dropped for t in c.turn_ids}
        if result.status == "failed":
            assert result.id not in listed  # nothing half-written
            continue
        stored = listed[result.id]
        # Stored failures are the report's, and the document says it is partial.
        assert {t for f in bank.document_failures(result.id) for t in f.turn_ids} == failed
        assert stored.partial == bool(report.failures)
        for exchange in chunk_exchanges(document):
            ids = set(exchange.turn_ids)
            if ids & (sources | failed | recorded) or not _memorable(exchange.turns):
                continue
            silent.append(f"{path.name} [{', '.join(exchange.turn_ids)}]")
    assert not silent, f"chunks dropped without a word: {silent}"


def test_a_second_ingest_asks_only_for_the_failed_chunks(ingested) -> None:
    bank, reports = ingested
    for path, report in reports.items():
        if not report.failures or report.documents[0].status == "failed":
            continue
        again = bank.ingest(path, mode="llm")
        [result] = again.documents
        assert result.status == "retried"
        assert result.retried_chunks == len(report.failures)
        assert bank.verify().ok
        break


def test_observations_are_rebuilt_with_the_model(ingested, engine) -> None:
    bank, _ = ingested
    lm = engine.language_model()
    try:
        jobs = bank.process_jobs(llm=lm)
    finally:
        lm.close()
    print(
        f"\nobservations: {jobs.observations_written} written ({jobs.mode}); "
        f"{jobs.fallback_note() or 'all by the model'}; "
        f"{len(jobs.unsupported)} unsupported sentences cut"
    )
    assert bank.pending_jobs() == 0 and not jobs.failed
    assert bank.verify().ok


def test_reflect_on_a_cpu_model_is_not_cut_while_it_reads_the_prompt(ingested) -> None:
    bank, _ = ingested
    query = demo_queries()[0]
    reflection = bank.reflect(query, commit=False)
    print(f"\nreflect ({reflection.mode}): {reflection.answer[:300]}\nnotes: {reflection.notes}")
    assert reflection.answer
    assert not reflection.offline, f"the model was not used: {reflection.notes}"


def test_compare_never_mixes_columns_without_saying_so(ingested) -> None:
    bank, _ = ingested
    comparison = bank.compare(
        demo_queries()[-1], [Disposition(skepticism=1), Disposition(skepticism=5)]
    )
    modes = [r.mode for r in comparison.reflections]
    print(f"\ncompare: {modes}; warning: {comparison.warning or '-'}")
    assert comparison.mixed == bool(comparison.warning)
    assert all(r.ok for r in comparison.reflections)


def test_the_openai_compatible_provider_extracts_from_the_same_server(
    llama_server, model_name
) -> None:
    """The second provider against the real model: llama.cpp's OpenAI face."""
    from core import LlmSettings, open_model
    from core.retain.llm_extract import LlmExtractor

    [document] = load_documents(demo_files()[0])
    exchange = chunk_exchanges(document)[1]
    settings = LlmSettings(host=llama_server.url, model=model_name, provider="openai", timeout=300)
    with open_model(settings) as lm:
        assert lm.probe().ready
        extractor = LlmExtractor(lm)
        facts = extractor.extract(exchange, demo_profile()["agent_name"], [])
        [checked] = extractor.take_checks()
        print(
            f"\nopenai provider: {len(facts)} facts kept, {len(checked.dropped)} dropped;"
            f" {lm.speed.eval_rate or 0:.1f} tokens/s"
        )
    assert all(set(f.source_ids) <= set(exchange.turn_ids) for f in facts)
