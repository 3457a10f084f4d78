"""reflect and compare: recall, verbalise Θ, answer, form opinions.

    query ─ recall ─┬─ Θ₁ ─ answer ─ opinions (structured) ─┐
                    ├─ Θ₂ ─ answer ─ opinions ───────────────┼─ plan against the bank's opinions
                    └─ …                                     ┘

`reflect` is one column of that picture and commits by default; `compare`
answers 2–4 dispositions on the *same* recalled evidence, one after another
(a local model answers one request at a time), and commits nothing; `commit_reflection` keeps one later. Without a reachable
language model each column is the extractive reflection (core/reflect/offline.py),
and every reflection says which mode produced it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from core.providers.llm import LanguageModel, LanguageModelError, ModelChoice
from core.recall.packing import TOKEN_COUNTS
from core.recall.pipeline import recall
from core.reflect import keeping, offline
from core.reflect.disposition import system_prompt
from core.reflect.formation import ProposedOpinion, ask_opinions, plan_opinions
from core.reflect.prompt import answer_prompt, bank_time, evidence_from
from core.reflect.values import (
    OFFLINE_MODE,
    Comparison,
    Evidence,
    Reflection,
    ReflectionError,
    llm_mode,
)
from core.retain.opinions import latest_events
from core.store.bank_store import utcnow
from core.store.units import get_units
from core.tags import TagScope
from core.types import BankProfile, Change, Disposition, InvalidInputError, new_id

if TYPE_CHECKING:
    from core.handle import BankHandle
    from core.recall.result import RecallResult

MIN_COMPARE = 2
MAX_COMPARE = 4
# The answer's length when the asker sets none: ~750 words, more than a person
# reads as one answer (the MCP tool's default too). Unbounded, a model that
# loops writes until the server's own limit, minutes of a small CPU.
ANSWER_MAX_TOKENS = 1024
# Entity profiles get this share of the token budget, on top of the facts.
OBSERVATION_SHARE = 0.25
# Model failures after which a reflection is answered extractively rather than
# failing: the model is gone, not pulled, too slow, or cannot finish its answer.
# A model that answers nonsense ("invalid") is an error the person should see.
FALLBACK_KINDS = frozenset({"unreachable", "timeout", "model", "truncated"})
# Of those, the failures after which the model is not asked again in one compare.
GONE_KINDS = frozenset({"unreachable", "timeout", "model"})


@dataclass(frozen=True)
class _Context:
    """What every disposition of one reflect or compare shares."""

    query: str
    profile: BankProfile
    evidence: tuple[Evidence, ...]
    recall: RecallResult
    budget_tokens: int
    now: datetime | None
    lm: LanguageModel | None
    model: str
    notes: tuple[str, ...]
    as_of: datetime | None
    asked: Asked
    count_tokens: Callable[[list[str]], list[int]]  # recall's counter (the embedder's tokenizer)


@dataclass(frozen=True)
class Asked:
    """What a caller may add to a question: the tags the evidence is limited
    to, the asker's situation (`context`: given to the answer and recalled
    with), and the longest answer in tokens."""

    tags: TagScope | None = None
    context: str | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens <= 0
        ):
            raise InvalidInputError(
                f"max_tokens must be a positive integer, got {self.max_tokens!r}"
            )
        if self.context is not None and not isinstance(self.context, str):
            raise InvalidInputError("context must be text")


def _prepare(
    bank: BankHandle,
    query: str,
    budget_tokens: int,
    llm: LanguageModel | None,
    now: datetime | None,
    asked: Asked = Asked(),
) -> tuple[_Context, ModelChoice]:
    """Recall once and decide the mode. Returns the context and the model
    choice (to close when done: it closes a model made here)."""
    if not isinstance(budget_tokens, int) or budget_tokens <= 0:
        raise InvalidInputError(f"budget_tokens must be a positive integer, got {budget_tokens!r}")
    situation = (asked.context or "").strip()
    result = recall(
        bank,
        f"{query}\n{situation}" if situation else query,
        budget_tokens=budget_tokens,
        now=now,
        observation_budget=int(budget_tokens * OBSERVATION_SHARE),
        tags=asked.tags,
    )
    items = [*result.items, *result.observations]
    reader = bank.store.reader()
    units = get_units(reader, [i.unit_id for i in items])
    evidence = tuple(evidence_from(items, units, latest_events(reader, list(units))))
    # The reflection's own time: the reference time asked for, else the newest evidence.
    times = [t for t in (bank_time(u) for u in units.values()) if t is not None]
    as_of = now or (max(times) if times else None)
    choice = ModelChoice(llm, bank.language_model)
    lm = choice.model
    notes = () if lm is not None else (f"{choice.why_not}: the reflection is extractive",)
    context = _Context(
        query=query,
        profile=bank.profile(),
        evidence=evidence,
        recall=result,
        budget_tokens=budget_tokens,
        now=now,
        lm=lm,
        model=lm.name if lm is not None else "",
        notes=notes,
        as_of=as_of,
        asked=asked,
        count_tokens=lambda texts: TOKEN_COUNTS.count(bank.embedder, texts),
    )
    return context, choice


def _fallen_back(ctx: _Context, error: ReflectionError) -> _Context:
    note = f"the language model failed ({error}): the reflection is extractive"
    return replace(ctx, lm=None, model="", notes=(*ctx.notes, note))


@dataclass(frozen=True)
class _Answered:
    """One disposition's model output, before planning against the bank."""

    answer: str
    proposals: list[ProposedOpinion]
    opinion_error: str | None
    system: str
    prompt: str
    notes: tuple[str, ...] = ()


def _answer(ctx: _Context, disposition: Disposition) -> _Answered:
    """Ask the model for the answer, then for the opinions. Network only: safe in a thread.

    A failed answer raises ReflectionError; failed opinions leave the answer and
    say why in `opinion_error`."""
    assert ctx.lm is not None
    system = system_prompt(ctx.profile, disposition)
    prompt = answer_prompt(
        ctx.query, ctx.evidence, ctx.now, ctx.asked.context, ctx.asked.max_tokens
    )
    limit = ctx.asked.max_tokens or ANSWER_MAX_TOKENS
    cut: list[str] = []

    def said_cut(tokens: int) -> None:
        cut.append(
            f"the answer was cut at its limit of {tokens:,} tokens (kept to its last full sentence)"
        )

    try:
        answer = ctx.lm.chat(system, prompt, max_tokens=limit, on_cut=said_cut)
    except LanguageModelError as error:
        raise ReflectionError(f"no answer: {error}", error.kind) from None
    proposals: list[ProposedOpinion] = []
    opinion_error = None
    if ctx.evidence:
        try:
            proposals = ask_opinions(
                ctx.lm, ctx.profile, disposition, ctx.query, answer, ctx.evidence
            )
        except LanguageModelError as error:
            opinion_error = f"no opinions formed: {error}"
    return _Answered(answer, proposals, opinion_error, system, prompt, tuple(cut))


def _llm_reflection(
    bank: BankHandle, ctx: _Context, disposition: Disposition, answered: _Answered
) -> Reflection:
    planned, vectors = plan_opinions(bank, answered.proposals, ctx.query)
    return Reflection(
        id=new_id(),
        query=ctx.query,
        disposition=disposition,
        answer=answered.answer,
        mode=llm_mode(ctx.model),
        model=ctx.model,
        created_at=utcnow(),
        evidence=ctx.evidence,
        opinions=tuple(planned),
        system_prompt=answered.system,
        prompt=answered.prompt,
        budget_tokens=ctx.budget_tokens,
        opinion_error=answered.opinion_error,
        notes=(*ctx.notes, *answered.notes),
        as_of=ctx.as_of,
        recall=ctx.recall,
        vectors=vectors,
    )


def _offline_reflection(ctx: _Context, disposition: Disposition) -> Reflection:
    selected, left_out = offline.select(ctx.query, ctx.evidence, disposition)
    answer = offline.summary(ctx.query, disposition, selected, left_out, ctx.evidence)
    return Reflection(
        id=new_id(),
        query=ctx.query,
        disposition=disposition,
        answer=offline.within_tokens(answer, ctx.asked.max_tokens, ctx.count_tokens),
        mode=OFFLINE_MODE,
        model="",
        created_at=utcnow(),
        evidence=tuple(s.evidence for s in selected),
        system_prompt=system_prompt(ctx.profile, disposition),
        budget_tokens=ctx.budget_tokens,
        notes=ctx.notes,
        left_out=tuple(left_out),
        as_of=ctx.as_of,
        recall=ctx.recall,
    )


def _failed(ctx: _Context, disposition: Disposition, error: ReflectionError) -> Reflection:
    return Reflection(
        id=new_id(),
        query=ctx.query,
        disposition=disposition,
        answer="",
        mode=llm_mode(ctx.model),
        model=ctx.model,
        created_at=utcnow(),
        evidence=ctx.evidence,
        system_prompt=system_prompt(ctx.profile, disposition),
        budget_tokens=ctx.budget_tokens,
        error=str(error),
        notes=ctx.notes,
        as_of=ctx.as_of,
        recall=ctx.recall,
    )


def reflect(
    bank: BankHandle,
    query: str,
    disposition: Disposition | None = None,
    budget_tokens: int = 4096,
    commit: bool = True,
    llm: LanguageModel | None = None,
    *,
    now: datetime | None = None,
    asked: Asked = Asked(),
) -> Reflection:
    """Answer `query` from the bank under Θ (default: the bank's own) and, with
    `commit`, keep the reflection and apply the opinions it forms. `asked`:
    the tags, the asker's context and the answer's length (see `Asked`).

    Raises ReflectionError when the language model gives no answer (nothing is
    written). When it answers but gives no usable opinions, the reflection says
    why in `opinion_error` and forms none."""
    disposition = disposition or bank.profile().disposition
    ctx, choice = _prepare(bank, query, budget_tokens, llm, now, asked)
    try:
        if ctx.lm is None:
            reflection = _offline_reflection(ctx, disposition)
        else:
            try:
                answered = _answer(ctx, disposition)
            except ReflectionError as error:
                if error.kind not in FALLBACK_KINDS:
                    raise
                # The model went away (or is not pulled, or too slow) since the
                # check: answer extractively, as when it was never there, and say why.
                reflection = _offline_reflection(_fallen_back(ctx, error), disposition)
            else:
                reflection = _llm_reflection(bank, ctx, disposition, answered)
    finally:
        choice.close()
    if commit:
        with _commit_lock:
            return keeping.commit(bank, reflection)[1]
    return reflection


def compare(
    bank: BankHandle,
    query: str,
    dispositions: Sequence[Disposition],
    budget_tokens: int = 4096,
    llm: LanguageModel | None = None,
    *,
    now: datetime | None = None,
) -> Comparison:
    """The same recalled evidence answered under each disposition, one after another.

    One after another, not in parallel: a local model answers one request at a
    time, and requests waiting in its queue would count against their own
    silence timeout (a CPU model reading a 4,000-token prompt takes a minute).

    Commits nothing: each reflection carries the opinions it would form, and
    `commit_reflection` keeps the chosen one. A disposition the model failed
    for comes back with `error` set rather than sinking the others."""
    dispositions = list(dispositions)
    if not MIN_COMPARE <= len(dispositions) <= MAX_COMPARE:
        raise InvalidInputError(
            f"compare takes {MIN_COMPARE} to {MAX_COMPARE} dispositions, got {len(dispositions)}"
        )
    if not all(isinstance(d, Disposition) for d in dispositions):
        raise InvalidInputError("compare takes Disposition values")
    ctx, choice = _prepare(bank, query, budget_tokens, llm, now)
    try:
        if ctx.lm is None:
            reflections = [_offline_reflection(ctx, d) for d in dispositions]
        else:
            reflections = _columns(bank, ctx, dispositions)
    finally:
        choice.close()
    return Comparison(query=query, reflections=tuple(reflections), recall=ctx.recall)


def _columns(
    bank: BankHandle, ctx: _Context, dispositions: Sequence[Disposition]
) -> list[Reflection]:
    """Each disposition asked of the model in turn. A column the model failed for
    is extractive and says why; once the model is gone (unreachable, silent, not
    pulled) the remaining columns are not asked, only listed extractively."""
    reflections: list[Reflection] = []
    gone: ReflectionError | None = None
    for disposition in dispositions:
        if gone is None:
            try:
                answered = _answer(ctx, disposition)
            except ReflectionError as error:
                if error.kind not in FALLBACK_KINDS:
                    reflections.append(_failed(ctx, disposition, error))
                    continue
                if error.kind in GONE_KINDS:
                    gone = error
                reflections.append(_offline_reflection(_fallen_back(ctx, error), disposition))
                continue
            reflections.append(_llm_reflection(bank, ctx, disposition, answered))
        else:
            reflections.append(_offline_reflection(_fallen_back(ctx, gone), disposition))
    return reflections


# Commits of one bank are serialised so two threads cannot keep the same reflection twice.
_commit_lock = threading.Lock()


def commit_reflection(
    bank: BankHandle, reflection: Reflection, *, apply_opinions: bool = True
) -> Change:
    """Keep `reflection`: store its record and apply exactly its opinions.

    Each planned step is re-applied to the opinion as it is now. A reflection
    is committed once; a second commit is refused with ReflectionError."""
    if not isinstance(reflection, Reflection):
        raise InvalidInputError("commit_reflection takes a Reflection")
    with _commit_lock:
        return keeping.commit(bank, reflection, apply_opinions=apply_opinions)[0]
