"""What a caller may add to reflect (Hindsight's reflect options): the tags its
evidence is limited to, the asker's context, the answer's length, and a JSON
schema the answer is also given in (core/reflect/structured.py)."""

from __future__ import annotations

import json

import pytest

from core import tags as tagging
from core.providers.llm import LanguageModel, LlmSettings
from core.reflect.structured import check_schema, structured_output
from core.reflect.values import Evidence, Reflection
from core.store.bank_store import utcnow
from core.types import Disposition, Document, InvalidInputError, Turn
from tests.fakes.ollama_server import Reply

RECOMMENDATION = {
    "type": "object",
    "properties": {
        "recommendation": {"type": "string"},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "confidence": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "required": ["recommendation", "reasons"],
}


def _reflection(texts, mode="offline extractive") -> Reflection:
    evidence = tuple(
        Evidence(unit_id=f"u{i}", network="world", text=t, date="2024-01-01", confidence=None)
        for i, t in enumerate(texts)
    )
    return Reflection(
        id="r1",
        query="What should I learn?",
        disposition=Disposition(),
        answer="Python, for data science.",
        mode=mode,
        model="" if mode.startswith("offline") else "llama3.2",
        created_at=utcnow(),
        evidence=evidence,
    )


def test_offline_fills_text_and_lists_of_text_from_the_evidence():
    facts = ["Python is great for data science.", "Pandas makes tables easy."]
    value, error = structured_output(_reflection(facts), RECOMMENDATION, None)
    assert error is None
    assert value == {"recommendation": " ".join(facts), "reasons": facts}


@pytest.mark.parametrize(
    ("prop", "named"),
    [
        ({"type": "integer"}, "a number"),
        ({"type": "boolean"}, "a yes or no"),
        ({"type": "string", "enum": ["yes", "no"]}, "fixed values"),
        ({"type": "string", "format": "date-time"}, "set format"),
    ],
)
def test_offline_never_guesses_what_an_extractive_answer_cannot_give(prop, named):
    schema = {"type": "object", "properties": {"score": prop}, "required": ["score"]}
    value, error = structured_output(_reflection(["A fact."]), schema, None)
    assert value is None and "score" in error and named in error


def test_a_list_the_evidence_cannot_fill_is_an_error_not_a_short_list():
    schema = {"type": "array", "items": {"type": "string"}, "minItems": 3}
    value, error = structured_output(_reflection(["One fact."]), schema, None)
    assert value is None and "needs 3 items" in error


def test_an_invalid_schema_is_refused():
    with pytest.raises(InvalidInputError, match="not a valid JSON Schema"):
        check_schema({"type": "no-such-type"})
    with pytest.raises(InvalidInputError, match="JSON Schema object"):
        check_schema(["type", "object"])


def test_with_a_model_the_schema_is_ollamas_format_and_the_answer_is_checked(fake_ollama):
    fake_ollama.script(
        Reply.json({"recommendation": "Python"}),  # misses `reasons`: asked again
        Reply.json({"recommendation": "Python", "reasons": ["data science"]}),
    )
    lm = LanguageModel(LlmSettings(host=fake_ollama.url, model="llama3.2"))
    try:
        value, error = structured_output(
            _reflection([], mode="ollama:llama3.2"), RECOMMENDATION, lm
        )
    finally:
        lm.close()
    assert error is None and value == {"recommendation": "Python", "reasons": ["data science"]}
    sent = fake_ollama.chat_requests
    assert [r["format"] for r in sent] == [RECOMMENDATION, RECOMMENDATION]
    assert "reasons" in sent[1]["messages"][-1]["content"]  # the re-ask names the problem
    assert "Python, for data science." in sent[0]["messages"][-1]["content"]


def test_a_model_that_never_fits_gives_the_reason(fake_ollama):
    fake_ollama.script(*[Reply.text("not json")] * 4)
    lm = LanguageModel(LlmSettings(host=fake_ollama.url, model="llama3.2", retries=1))
    try:
        value, error = structured_output(
            _reflection([], mode="ollama:llama3.2"), RECOMMENDATION, lm
        )
    finally:
        lm.close()
    assert value is None and "no answer fitting the schema" in error


def _tagged(bank) -> None:
    turns = (
        Turn("t0", "", "Mara's project uses Rust for the parser.", tags=("team:a",)),
        Turn("t1", "", "Omar's project uses Go for the scheduler.", tags=("team:b",), index=1),
        Turn("t2", "", "Team A wants to learn data science.", tags=("team:a",), index=2),
    )
    bank.ingest(Document(id="d", title="teams", turns=turns), mode="verbatim")


@pytest.mark.slow
def test_reflect_with_tags_context_and_max_tokens(bank, embedder):
    _tagged(bank)
    scope = tagging.TagFilter(("team:b",), "any_strict")
    scoped = bank.reflect("Which languages do the projects use?", tags=scope, commit=False)
    assert {e.text for e in scoped.evidence} == {"Omar's project uses Go for the scheduler."}
    context = bank.reflect(
        "What should we learn?", context="we want to learn data science", commit=False
    )
    assert context.evidence[0].text == "Team A wants to learn data science."
    long = bank.reflect("Which languages do the projects use?", commit=False)
    short = bank.reflect("Which languages do the projects use?", max_tokens=30, commit=False)
    assert embedder.count_tokens(long.answer) > 30 >= embedder.count_tokens(short.answer)
    assert short.answer.endswith("…")


def test_max_tokens_must_be_positive(bank):
    with pytest.raises(InvalidInputError, match="max_tokens"):
        bank.reflect("anything", max_tokens=0, commit=False)


def test_the_prompt_carries_the_context_and_the_length(bank, engine, fake_ollama):
    from tests.support.reflection import use_fake, user_of

    _tagged(bank)
    use_fake(engine, fake_ollama)
    fake_ollama.script(Reply.text("Learn Python."), Reply.json({"opinions": []}))
    bank.reflect("What should we learn?", context="we like data", max_tokens=40, commit=False)
    body = fake_ollama.chat_requests[0]
    assert "The asker's situation: we like data" in user_of(body)
    assert "(at most 30 words)" in user_of(body)
    assert body["options"]["num_predict"] == 40
    assert json.dumps(body).count("num_predict") == 1


def test_an_answer_without_a_length_is_bounded_and_a_cut_one_says_so(bank, engine, fake_ollama):
    from core.reflect.reflect import ANSWER_MAX_TOKENS
    from tests.support.reflection import use_fake

    _tagged(bank)
    use_fake(engine, fake_ollama)
    # A model that never stops: the fake cuts it at num_predict (done_reason "length").
    endless = "Learn Python, since the team likes data. " * 2000
    fake_ollama.script(Reply.text(endless), Reply.json({"opinions": []}))
    reflection = bank.reflect("What should we learn?", commit=False)
    assert [r["options"]["num_predict"] for r in fake_ollama.chat_requests][0] == ANSWER_MAX_TOKENS
    assert any(f"cut at its limit of {ANSWER_MAX_TOKENS:,} tokens" in n for n in reflection.notes)
    assert reflection.answer.endswith(".") and len(reflection.answer) < len(endless)
    # Asked once: a cut answer is kept, not asked again with more room.
    assert len(fake_ollama.chat_requests) == 2
