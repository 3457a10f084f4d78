"""Observations: one neutral profile per entity, regenerated in the background.

Retain never waits for them: it queues an `observation` job (table `jobs`) for
each entity whose facts changed, at most one queued job per entity.
`process_jobs` runs the queue later (the studio after an ingest, the CLI at the
end of `engram ingest`):

- the entity's world and experience facts (never opinions) are gathered;
- `rules`: an extractive third-person profile of at most `PROFILE_MAX_TOKENS`
  tokens — a head line (type, number of facts, dates), then the entity's most
  important facts (`importance`: lasting states, life events, the people and
  things of its life, subjects it comes back to on many days; not an image
  shared or a mood) with their dates, in time order; rebuilt from the facts
  whenever they change;
- `llm`: a short third-person summary by the model of the most important
  facts, no opinions (falls back to the rules profile when the model gives no
  usable answer);
- the result is the entity's one OBSERVATION unit, replaced in place on
  regeneration (same id), mentioning the entity, with `source_ids` the union
  of the sources of the facts it was written from and one
  `observation_sources` row per such fact: its true provenance.

Jobs run in batches, each batch one transaction; a job whose entity has no
facts left (or is retracted) removes the observation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from core import tags as tagging
from core.progress import CancelToken, Progress, check, report
from core.retain.opinions import name_stems, topic_stems
from core.retain.rules import day_text, rewrite_pronouns
from core.store.bank_store import Tx, utcnow
from core.store.units import delete_units, get_units, insert_mentions, insert_units
from core.types import (
    Change,
    Entity,
    ExtractionMode,
    Kind,
    Network,
    NewUnit,
    Unit,
    new_id,
)

if TYPE_CHECKING:
    from core.handle import BankHandle
    from core.providers.llm import LanguageModel

JOB_KIND = "observation"
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
MAX_OBSERVATION_CHARS = 4000
# A rules profile stays this short (tokens): one entity must not crowd a recall
# budget, and a profile is a summary, not the entity's facts again.
PROFILE_MAX_TOKENS = 150
# Facts given to the model for one summary.
LLM_MAX_FACTS = 40
# Jobs written per transaction (their profiles are embedded together).
JOB_BATCH = 32


@dataclass
class JobsReport:
    processed: int = 0
    observations_written: int = 0
    observations_removed: int = 0  # entities with no facts left
    failed: list[tuple[str, str]] = field(default_factory=list)  # (entity id, reason)
    mode: str = "rules"
    model: str = ""
    notes: list[str] = field(default_factory=list)
    change: Change = field(default_factory=Change)
    # Why a model that was given was not used at all (down, not pulled): "" if it was.
    model_unused: str = ""
    # Sentences of the model's profiles that their facts did not support, cut
    # out: (entity name, sentence, why).
    unsupported: list[tuple[str, str, str]] = field(default_factory=list)

    def fallback_note(self) -> str:
        """Which profiles the rules wrote where a model was asked for, and why
        ('by rules: <why>', 'N by rules, the model failed (first reason)'), or ''
        when the model wrote every one: a report must never read "(llm)" alone
        over profiles the rules wrote, nor "(rules)" without saying why."""
        parts = [f"by rules: {self.model_unused}"] if self.model_unused else []
        if self.notes:
            parts.append(f"{len(self.notes)} by rules, the model failed ({self.notes[0]})")
        return "; ".join(parts)


def queue_observation_jobs(
    con: duckdb.DuckDBPyConnection, entity_ids: Sequence[str], now: datetime
) -> list[str]:
    """Queue a job per entity unless one is already queued; returns the new job ids."""
    if not entity_ids:
        return []
    queued = {
        r[0]
        for r in con.execute(
            "SELECT target FROM jobs WHERE kind = ? AND status IN (?, ?)"
            " AND target IN (SELECT unnest(?))",
            [JOB_KIND, QUEUED, RUNNING, list(entity_ids)],
        ).fetchall()
    }
    targets = [e for e in dict.fromkeys(entity_ids) if e not in queued]
    if not targets:
        return []
    ids = [new_id() for _ in targets]
    con.execute(
        "INSERT INTO jobs SELECT unnest(?), ?, unnest(?), ?, ?, ?, NULL",
        [ids, JOB_KIND, targets, QUEUED, now, now],
    )
    return ids


def pending_jobs(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute(
        "SELECT count(*) FROM jobs WHERE kind = ? AND status IN (?, ?)",
        [JOB_KIND, QUEUED, RUNNING],
    ).fetchone()[0]


# -- profiles ---------------------------------------------------------------------------

_SPEAKER_PREFIX = re.compile(r"^([^:\n]{1,60}):\s+(.*)$", re.DOTALL)


def third_person(text: str, speaker: str | None = None, verbatim: bool = False) -> str:
    """A fact in the third person: a verbatim "Name: I…" turn becomes
    "Name said: Name…", and an agent's first-person experience names the agent."""
    match = _SPEAKER_PREFIX.match(text) if verbatim else None
    if match and match.group(1).strip():
        name, body = match.group(1).strip(), match.group(2).strip()
        return f"{name} said: {rewrite_pronouns(body, name)}"
    if speaker:
        return rewrite_pronouns(text, speaker)
    return text


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", ")", "]", '"')) else text + "."


_DATE_LABEL = re.compile(r"\s*\(([^()]*\d{4})\)\s*[.!?]?\s*$")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?;])(?=\s+[A-Z(])")
# A first sentence this short (words) does not carry the fact alone.
GIST_MIN_WORDS = 6


def _gist(text: str, fact: Unit) -> str:
    """The fact's first sentence with its date: a profile states each fact once,
    briefly ("Ann adopted a greyhound (March 2021)."), and the rest is in the fact."""
    label = _DATE_LABEL.search(text)
    body = text[: label.start()] if label else text
    body = body.strip()
    first = _FIRST_SENTENCE.match(body)
    # A question and its answer ("Maya asked me "Any news…?"; Northwind signed…"):
    # what the profile states is the answer, never the question before it.
    if first and first.group(1).rstrip('"”’; ').endswith("?"):
        body = body[first.end() :].strip()
        first = _FIRST_SENTENCE.match(body)
    if first and len(first.group(1).split()) >= GIST_MIN_WORDS:
        body = first.group(1).rstrip(".!?; ")
    body = body.strip().rstrip(".!?; ")
    when = label.group(1) if label else ""
    if not when and (fact.occurred_start or fact.mentioned_at):
        when = day_text(fact.occurred_start or fact.mentioned_at)
    return f"{body} ({when})." if when else f"{body}."


def _approx_tokens(text: str) -> int:
    # About four characters a token for English under WordPiece; the real count
    # is used when the caller has a tokenizer.
    return -(-len(text) // 4)


_QUOTED_BY = re.compile(r"^[^:]{1,60}\b(?:said|asked|answered):")
# Reported speech: what the entity said or thinks, not what is so of it.
_REPORTED = re.compile(r"^[^,;:]{1,60}?\b(?:said that|thinks|told|asked|suggested|thanked)\b")


def _about(fact: Unit, name: str) -> int:
    """How much a fact tells about the entity: 3 when it is the subject of a
    narrative fact ("Ann went …"), 2 when the fact is its own words ("Ann said:
    …", "Ann thinks …"), 1 when it only names it, else 0."""
    text = fact.text.lstrip()
    if text.startswith(name):
        return 2 if _QUOTED_BY.match(text) or _REPORTED.match(text) else 3
    return 1 if re.search(rf"\b{re.escape(name)}\b", text) else 0


def _informative(fact: Unit) -> int:
    """0-2: facts with more content words say more ("Take a look at this" says little)."""
    return min(len(re.findall(r"\w{4,}", fact.text)), 12) // 5


# What makes a fact worth a profile (English grammar and the common words of a
# life, nothing fitted to a conversation): a lasting state of the entity ("Ann
# teaches yoga", "Ann is a nurse", "Ann has two cats"), a major life event
# ("Ann's father passed away", "Ann moved to Lisbon"), the people and things of
# its life ("Ann's husband", "Ann's dog"); against it, a passing moment (an
# image shared, a question asked, a feeling of the day).
_LASTING = re.compile(
    r"\b(?:is|are)\s+(?:a|an|the)\s|\b(?:works?|lives?|teach(?:es)?|has|have|owns?|stud(?:y|ies)"
    r"|plays?|volunteers?|runs?|leads?|manages?|builds?|writes?|paints?|loves?|likes?|prefers?"
    r"|enjoys?|belongs?|collects?|practi[cs]es?|trains?|coaches?)\b|\b(?:always|every|usually"
    r"|years?)\b",
    re.IGNORECASE,
)
_LIFE_EVENT = re.compile(
    r"\b(?:born|birth|died|death|passed\s+away|passed|funeral|married|marriage|wedding|divorc\w*"
    r"|engaged|pregnan\w*|adopt\w*|graduat\w*|moved|relocat\w*|hired|promot\w*|retir\w*"
    r"|new\s+job|internship|diagnos\w*|surgery|accident|broke\s+up|lost\s+(?:his|her|their|my)"
    r"|signed|launched|founded|started)\b",
    re.IGNORECASE,
)
_KIN = re.compile(
    r"['’]s\s+(?:(?:\w+\s+)?(?:husband|wife|partner|kids?|children|son|daughter|mom|mum|mother"
    r"|dad|father|parents|brother|sister|family|grand\w+|dogs?|cats?|pets?|job|home|house|team"
    r"|boss|friends?))\b",
    re.IGNORECASE,
)
_PASSING = re.compile(r"\bshared\s+(?:a|an)\b|\bshared\s+an\s+image\b|\b(?:today|tonight)\b", re.I)
_MOOD = re.compile(
    r"\b(?:excited|happy|glad|thrilled|stoked|proud|grateful|thankful|awesome|amazing|great)\b",
    re.I,
)


def importance(facts: Sequence[Unit], name: str) -> list[float]:
    """How much each fact is worth in a profile of `name`: about the entity, lasting
    or a life event, and on a subject the entity's facts come back to on many days
    (what recurs is what lasts), less a passing moment."""
    day = [
        (f.occurred_start or f.mentioned_at).date()
        if (f.occurred_start or f.mentioned_at)
        else None
        for f in facts
    ]
    names = name_stems(frozenset({name.casefold()}))
    stems = [topic_stems(f.text) - names for f in facts]
    days: dict[str, set] = {}
    for fact_stems, d in zip(stems, day, strict=True):
        for stem in fact_stems:
            days.setdefault(stem, set()).add(d)
    out = []
    for fact, fact_stems in zip(facts, stems, strict=True):
        text = fact.text
        about = _about(fact, name)
        recur = max((len(days[s]) for s in fact_stems), default=1)
        score = 2.0 * about + min(4.0, math.log2(recur)) + _informative(fact)
        score += 2.0 * bool(_LASTING.search(text)) + 3.0 * bool(_LIFE_EVENT.search(text))
        score += 1.0 * bool(_KIN.search(text))
        score -= 3.0 * bool(_PASSING.search(text))
        score -= 2.0 * bool(_REPORTED.match(text))  # what they thought of a moment
        if _MOOD.search(text) and len(fact_stems) <= 3:
            score -= 2.0  # "Deborah is really excited!": a mood, not a trait
        out.append(score)
    return out


_FRAME = frozenset({"said", "asked", "answered", "shared", "thinks", "that"})


def _similar(a: str, b: str, name: str) -> bool:
    """Most of the shorter fact's words are in the other (the entity's name and the
    attribution words aside): saying it again adds nothing to a profile."""
    skip = _FRAME | set(name.lower().split())
    wa = set(re.findall(r"\w{4,}", a.lower())) - skip
    wb = set(re.findall(r"\w{4,}", b.lower())) - skip
    return bool(wa and wb) and len(wa & wb) / min(len(wa), len(wb)) > 0.6


@dataclass(frozen=True)
class Composed:
    """A rules profile and the facts it quotes (its true sources)."""

    text: str
    used: tuple[Unit, ...]


def compose_profile(
    entity: Entity,
    facts: Sequence[Unit],
    agent_name: str = "",
    limit: int = 12,
    max_tokens: int = PROFILE_MAX_TOKENS,
    count_tokens: Callable[[str], int] | None = None,
) -> Composed:
    """A bounded third-person profile of an entity from its facts (oldest first),
    with the facts it used.

    A head line (type, how many facts, over which dates), then up to `limit`
    facts, the most important first (`importance`) while the whole stays within
    `max_tokens` (the embedder's count when `count_tokens` is given), none saying
    again what another says, written in time order."""
    count = count_tokens or _approx_tokens
    seen: set[str] = set()
    unique: list[Unit] = []
    for fact in facts:
        key = " ".join(fact.text.lower().split())
        if key not in seen:
            seen.add(key)
            unique.append(fact)
    dated = [
        f.occurred_start or f.mentioned_at for f in unique if f.occurred_start or f.mentioned_at
    ]
    span = ""
    if dated:
        first, last = min(dated), max(dated)
        span = (
            f", {day_text(first)}"
            if first.date() == last.date()
            else f", {day_text(first)} to {day_text(last)}"
        )
    count_label = f"{len(unique)} fact{'s' if len(unique) != 1 else ''}"
    head = f"{entity.name} ({entity.type}; {count_label}{span})."

    def line(fact: Unit) -> str:
        speaker = agent_name if fact.network is Network.EXPERIENCE and agent_name else None
        verbatim = fact.extraction_mode is ExtractionMode.VERBATIM
        return _gist(third_person(fact.text, speaker, verbatim), fact)

    scores = importance(unique, entity.name)
    about = [_about(f, entity.name) for f in unique]
    # Facts that name the entity, when there are any: the profile is about it.
    least = 1 if any(about) else 0
    texts = [line(f) for f in unique]
    # The most important first; of equals, the shorter (more of them fit).
    order = sorted(range(len(unique)), key=lambda i: (-scores[i], len(texts[i]), i))
    chosen: list[int] = []
    lines: dict[int, str] = {}
    used = count(head)
    for i in order:
        if len(chosen) >= limit:
            break
        if about[i] < least:
            continue
        text = texts[i]
        if any(_similar(text, lines[j], entity.name) for j in chosen):
            continue
        cost = count(" " + text)
        if used + cost <= max_tokens:
            chosen.append(i)
            lines[i] = text
            used += cost
    kept = sorted(chosen)
    body = " ".join(lines[i] for i in kept)
    text = f"{head} {body}".strip()
    if len(text) > MAX_OBSERVATION_CHARS:
        text = text[: MAX_OBSERVATION_CHARS - 1] + "…"
    return Composed(text, tuple(unique[i] for i in kept))


def rules_profile(
    entity: Entity,
    facts: Sequence[Unit],
    agent_name: str = "",
    limit: int = 12,
    max_tokens: int = PROFILE_MAX_TOKENS,
    count_tokens: Callable[[str], int] | None = None,
) -> str:
    """The text of `compose_profile`."""
    return compose_profile(entity, facts, agent_name, limit, max_tokens, count_tokens).text


OBSERVATION_SYSTEM = (
    "You write neutral profiles for an agent's memory. Given facts that mention one "
    "entity, write a short third-person profile of that entity (2 to 5 sentences): "
    "the most important lasting facts about it (who or what it is, what it does, the "
    "major events of its life, the people and things in it), not passing moments; "
    "only what the facts say, no opinions, no speculation, no first person."
)


def profile_facts(entity: Entity, facts: Sequence[Unit], limit: int = LLM_MAX_FACTS) -> list[Unit]:
    """The `limit` facts most worth a profile (`importance`), in time order: what
    the model is given to summarise, and so the profile's sources."""
    if len(facts) <= limit:
        return list(facts)
    scores = importance(facts, entity.name)
    best = sorted(sorted(range(len(facts)), key=lambda i: (-scores[i], i))[:limit])
    return [facts[i] for i in best]


# Of a profile sentence's content words, at least this share must be in its facts.
MIN_PROFILE_SUPPORT = 0.6
# A profile is 2 to 5 sentences. A real 0.5B model wrote one on and on to the
# reply limit (2,048 tokens, asked again with 4,096...: minutes per entity on a
# CPU); a reply is cut here instead, and kept to its last full sentence.
PROFILE_MAX_TOKENS = 300


def llm_profile(
    lm: LanguageModel,
    entity: Entity,
    facts: Sequence[Unit],
    unsupported: list[tuple[str, str, str]] | None = None,
) -> str:
    """The model's profile of `entity` from `facts` (the caller chooses them:
    `profile_facts`), only the sentences its facts support (a small model
    invents: "Maya, a 25-year-old woman with a passion for music"); each
    sentence cut is added to `unsupported`. LanguageModelError when no sentence
    is left."""
    from core.providers.llm import LanguageModelError
    from core.retain.grounding import Vocabulary, support
    from core.retain.statements import sentences

    chosen = list(facts)
    listing = "\n".join(f"- {f.text}" for f in chosen)
    prompt = f"Entity: {entity.name} ({entity.type})\nFacts:\n{listing}\n\nProfile:"
    text = " ".join(lm.chat(OBSERVATION_SYSTEM, prompt, max_tokens=PROFILE_MAX_TOKENS).split())
    if not text:
        raise LanguageModelError("the model returned an empty profile")
    vocabulary = Vocabulary.of([f.text for f in chosen], [entity.name, *entity.aliases])
    kept: list[str] = []
    cut: list[tuple[str, str, str]] = []
    said: set[str] = set()
    for sentence in sentences(text):
        # A model that runs on repeats itself: a sentence is kept once.
        key = " ".join(sentence.casefold().split())
        if key in said:
            continue
        said.add(key)
        found = support(sentence, vocabulary)
        if found.supported(MIN_PROFILE_SUPPORT):
            kept.append(sentence)
        else:
            cut.append((entity.name, sentence, found.why()))
    if unsupported is not None:
        unsupported += cut
    if not kept:
        raise LanguageModelError(
            "no sentence of the model's profile is supported by the facts it was given"
            f" ({cut[0][2]})",
            "invalid",
        )
    return " ".join(kept)[:MAX_OBSERVATION_CHARS]


# -- running the queue ----------------------------------------------------------------


def entity_facts(con: duckdb.DuckDBPyConnection, entity_id: str) -> list[Unit]:
    """Active world and experience units mentioning the entity, oldest first."""
    ids = [
        r[0]
        for r in con.execute(
            # Oldest first; facts of the same time in conversation order.
            "SELECT u.id FROM units u LEFT JOIN turns t"
            " ON t.document_id = u.document_id AND t.id = u.source_ids[1]"
            " WHERE u.status = 'active' AND u.network IN ('world', 'experience')"
            " AND u.id IN (SELECT unit_id FROM mentions WHERE entity_id = ?)"
            " ORDER BY coalesce(u.occurred_start, u.mentioned_at) NULLS LAST, u.created_at,"
            " t.idx NULLS LAST, u.rowid, u.id",
            [entity_id],
        ).fetchall()
    ]
    units = get_units(con, ids)
    return [units[i] for i in ids if i in units]


def observation_of(con: duckdb.DuckDBPyConnection, entity_id: str) -> Unit | None:
    row = con.execute(
        "SELECT unit_id FROM observations WHERE entity_id = ?", [entity_id]
    ).fetchone()
    if row is None:
        return None
    return get_units(con, [row[0]]).get(row[0])


def observation_sources(con: duckdb.DuckDBPyConnection, observation_id: str) -> list[str]:
    rows = con.execute(
        "SELECT unit_id FROM observation_sources WHERE observation_id = ? ORDER BY rowid",
        [observation_id],
    ).fetchall()
    return [r[0] for r in rows]


def sources_by_observation(
    con: duckdb.DuckDBPyConnection, observation_ids: Sequence[str]
) -> dict[str, list[str]]:
    """The facts each of these observations was made from (one query)."""
    if not observation_ids:
        return {}
    rows = con.execute(
        "SELECT observation_id, unit_id FROM observation_sources"
        " WHERE observation_id IN (SELECT unnest(?)) ORDER BY rowid",
        [list(observation_ids)],
    ).fetchall()
    out: dict[str, list[str]] = {}
    for observation_id, unit_id in rows:
        out.setdefault(observation_id, []).append(unit_id)
    return out


@dataclass
class _Profile:
    """One job's outcome, computed before the batch is written."""

    job_id: str
    entity_id: str
    entity: Entity | None = None
    facts: list[Unit] = field(default_factory=list)
    used: list[Unit] = field(default_factory=list)  # the facts the profile is written from
    text: str = ""
    mode: ExtractionMode = ExtractionMode.RULES
    model: str = ""
    vector: np.ndarray | None = None


def process_jobs(
    bank: BankHandle,
    llm: LanguageModel | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
) -> JobsReport:
    """Run queued observation jobs (oldest first, at most `limit`).

    With `llm` (and the model answering) profiles are summaries, else rules
    profiles. Jobs run in batches: the batch's profiles are written, and their
    jobs marked done, in one transaction. A cancel stops before the next job;
    batches written so far stay."""
    con = bank.store.reader()
    sql = "SELECT id, target FROM jobs WHERE kind = ? AND status IN (?, ?) ORDER BY created_at, id"
    params: list = [JOB_KIND, QUEUED, RUNNING]
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    jobs = con.execute(sql, params).fetchall()
    use_llm, unused = False, ""
    if llm is not None and jobs:
        status = llm.probe()
        use_llm, unused = status.ready, ("" if status.ready else status.reason)
    result = JobsReport(
        mode="llm" if use_llm else "rules",
        model=llm.name if use_llm else "",
        model_unused=unused,
    )
    profile = bank.profile()
    max_facts = int(profile.config["retain.observation_max_facts"])
    for start in range(0, len(jobs), JOB_BATCH):
        batch: list[_Profile] = []
        for job_id, entity_id in jobs[start : start + JOB_BATCH]:
            check(cancel)
            batch.append(
                _profile(
                    con,
                    job_id,
                    entity_id,
                    llm if use_llm else None,
                    profile.agent_name,
                    max_facts,
                    result,
                    bank.embedder.count_tokens,
                )
            )
            report(progress, start + len(batch), len(jobs), "observations")
        written = [p for p in batch if p.facts]
        if written:
            vectors = bank.embedder.embed([p.text for p in written])
            for p, vector in zip(written, vectors, strict=True):
                p.vector = vector
        try:
            change = _write_batch(bank, batch)
        except Exception as error:  # noqa: BLE001 - one bad batch must not stop the queue
            for p in batch:
                _fail_job(bank, p.job_id, f"{type(error).__name__}: {error}")
                result.failed.append((p.entity_id, str(error)))
            continue
        result.change = result.change | change
        result.processed += len(batch)
        result.observations_written += len(written)
        result.observations_removed += len(change.removed.get(Kind.UNIT, ()))
    return result


def _profile(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    entity_id: str,
    lm: LanguageModel | None,
    agent_name: str,
    max_facts: int,
    result: JobsReport,
    count_tokens: Callable[[str], int] | None = None,
) -> _Profile:
    from core.retain.entities import get_entity

    entity = get_entity(con, entity_id)
    out = _Profile(job_id, entity_id, entity)
    if entity is None or entity.status != "active":
        return out
    out.facts = entity_facts(con, entity_id)
    if not out.facts:
        return out
    if lm is not None:
        from core.providers.llm import LanguageModelError

        given = profile_facts(entity, out.facts)
        try:
            out.text = llm_profile(lm, entity, given, result.unsupported)
            out.mode, out.model, out.used = ExtractionMode.LLM, lm.name, given
            return out
        except LanguageModelError as error:
            result.notes.append(f"{entity.name}: rules profile ({error})")
    composed = compose_profile(entity, out.facts, agent_name, max_facts, count_tokens=count_tokens)
    out.text, out.used = composed.text, list(composed.used)
    return out


def _write_batch(bank: BankHandle, batch: Sequence[_Profile]) -> Change:
    now = utcnow()
    change = Change()
    with bank.store.transaction() as tx:
        con = tx.con
        for p in batch:
            if p.facts and p.entity is not None and p.vector is not None:
                change = change | _write_observation(tx, p, bank.store.embedding_model, now)
            else:
                change = change | _remove_observation(tx, p.entity_id, now)
            _finish_job(con, p.job_id, DONE, None, now)
    return change | Change.of(updated={Kind.JOB: [p.job_id for p in batch]})


def _write_observation(tx: Tx, p: _Profile, embedding_model: str, now: datetime) -> Change:
    # Its sources are the facts it was written from, not every fact of the entity.
    con, entity, facts = tx.con, p.entity, p.used or p.facts
    assert entity is not None and p.vector is not None
    sources = list(dict.fromkeys(s for f in facts for s in f.source_ids))
    starts = [f.occurred_start for f in facts if f.occurred_start is not None]
    ends = [f.occurred_end or f.occurred_start for f in facts if f.occurred_start is not None]
    mentioned = [f.mentioned_at for f in facts if f.mentioned_at is not None]
    occurred_start = min(starts) if starts else None
    occurred_end = max(ends) if ends else None
    mentioned_at = max(mentioned) if mentioned else None
    # Shown as the union of its facts' tags; a tag filter lets it through only
    # when each of them passes (core/store/tagged.py).
    tags = tagging.union(f.tags for f in facts)
    row = con.execute(
        "SELECT o.unit_id FROM observations o JOIN units u ON u.id = o.unit_id"
        " WHERE o.entity_id = ?",
        [entity.id],
    ).fetchall()
    if row:
        unit_id = row[0][0]
        con.execute(
            "UPDATE units SET text = ?, vector = ?, source_ids = ?, occurred_start = ?,"
            " occurred_end = ?, mentioned_at = ?, extraction_mode = ?, model = ?,"
            " embedding_model = ?, updated_at = ?, status = 'active', tags = ? WHERE id = ?",
            [
                p.text,
                p.vector.astype(np.float32).tolist(),
                sources,
                occurred_start,
                occurred_end,
                mentioned_at,
                str(p.mode),
                p.model,
                embedding_model,
                now,
                list(tags),
                unit_id,
            ],
        )
        con.execute("DELETE FROM mentions WHERE unit_id = ?", [unit_id])
        con.execute("DELETE FROM observation_sources WHERE observation_id = ?", [unit_id])
        insert_mentions(con, [unit_id], [entity.id], [entity.name])
        change = Change.of(updated={Kind.UNIT: [unit_id]})
    else:
        unit = NewUnit(
            id=new_id(),
            text=p.text,
            network=Network.OBSERVATION,
            occurred_start=occurred_start,
            occurred_end=occurred_end,
            mentioned_at=mentioned_at,
            source_ids=tuple(sources),
            entity_ids=(entity.id,),
            extraction_mode=p.mode,
            model=p.model,
            tags=tags,
        )
        [unit_id] = insert_units(con, [unit], p.vector[None, :], embedding_model, now)
        change = Change.of(added={Kind.UNIT: [unit_id]})
    con.execute("DELETE FROM observations WHERE entity_id = ?", [entity.id])
    con.execute(
        "INSERT INTO observations VALUES (?, ?, ?, ?, ?)",
        [entity.id, unit_id, str(p.mode), p.model, now],
    )
    con.execute(
        "INSERT INTO observation_sources SELECT ?, unnest(?)", [unit_id, [f.id for f in facts]]
    )
    tx.touch([unit_id])
    return change | Change.of(updated={Kind.ENTITY: [entity.id]})


def _remove_observation(tx: Tx, entity_id: str, now: datetime) -> Change:
    con = tx.con
    row = con.execute(
        "SELECT unit_id FROM observations WHERE entity_id = ?", [entity_id]
    ).fetchall()
    if not row:
        return Change()
    removed = delete_units(con, [row[0][0]])
    con.execute("DELETE FROM observation_sources WHERE observation_id = ?", [row[0][0]])
    con.execute("DELETE FROM observations WHERE entity_id = ?", [entity_id])
    tx.touch(removed)
    return Change.of(removed={Kind.UNIT: removed})


def _finish_job(
    con: duckdb.DuckDBPyConnection, job_id: str, status: str, error: str | None, now: datetime
) -> None:
    con.execute(
        "UPDATE jobs SET status = ?, error = ?, updated_at = ? WHERE id = ?",
        [status, error, now, job_id],
    )


def _fail_job(bank: BankHandle, job_id: str, error: str) -> None:
    with bank.store.transaction() as tx:
        _finish_job(tx.con, job_id, FAILED, error[:1000], utcnow())
