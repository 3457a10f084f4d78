"""Retain: conversations in, a four-network memory graph out.

`ingest` runs each document through five steps:

1. **extract** — the document's exchanges go through the extractor
   (`llm`, `rules`) one chunk at a time, or each turn becomes one fact
   (`verbatim`, facts.py). The bank's entity names, and the names found in
   earlier chunks, are passed as `known_entities`. The cancel token is checked
   between chunks. Nothing is written yet.
2. **embed** — the facts' vectors, in batches, still before any write.
3. **plan** (read only, plan.py) — entity resolution, near-duplicate
   detection, the four kinds of links, opinion assessment (model calls in
   `llm` mode).
4. **write** — ONE transaction per document (write.py). A cancel or an error
   before the commit leaves the bank exactly as it was before that document;
   documents before it in the same call stay.
5. observations are *not* regenerated here: each entity whose facts changed
   gets a queued job, and `process_jobs` (observations.py) runs them later.

Failed chunks (`llm` mode): a chunk the model cannot turn into facts is
reported in `IngestReport.failures` (report.py) with its turn ids and reason,
recorded in `ingest_failures`, and nothing of it is written; the document's
other chunks are written. A document none of whose chunks succeeded is not
written at all, so ingesting it again retries it. A partly failed one is
stored and shown as partial (`StoredDocument.failed_chunks`) until it is
whole: ingesting it again (without `force`) extracts exactly the chunks whose
turns failed, adds their facts to the document in one transaction and keeps
a failure only for a chunk that fails again; `force=True` extracts it all.

Re-ingesting a document whose content hash is already in the bank does
nothing unless `force`: then the document's previous units (and their
mentions, links and opinion history) are replaced in the same transaction
(documents.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.progress import CancelToken, Progress, check, report
from core.retain.documents import (
    check_document,
    content_hash,
    failures_of,
    new_document_id,
    stored_document,
    stored_with_hash,
    stored_with_id,
    units_of,
)
from core.retain.extract import ExtractionError, chunk_exchanges
from core.retain.facts import (
    Extraction,
    Fact,
    clean_fact,
    known_names,
    learn_names,
    verbatim_facts,
)
from core.retain.networks import BankAgent
from core.retain.opinions import (
    FORMED,
    Assessment,
    OpinionPlan,
    OpinionState,
    assess_llm,
    assess_rules,
)
from core.retain.plan import Plan, plan_document
from core.retain.report import CheckedFact, ChunkFailure, DocumentResult, IngestReport
from core.retain.write import write_document
from core.types import (
    INGEST_MODES,
    Change,
    Document,
    ExtractionMode,
    InvalidInputError,
    Kind,
    Turn,
)

if TYPE_CHECKING:
    from core.handle import BankHandle
    from core.providers.llm import LanguageModel, ModelChoice

MODES = INGEST_MODES
EMBED_BATCH = 256
# Chunks in a row lost to an unreachable or silent model before the rest of the
# run stops asking it.
DOWN_AFTER = 2
# In llm mode a chunk is this many progress steps, filled as its reply streams:
# a CPU model takes a minute or more per chunk, and progress must not sit still.
CHUNK_STEPS = 20
# Tokens a reply is expected to take before one was measured (then: the mean).
EXPECTED_REPLY_TOKENS = 400
# `auto` mode judges the model once it gave this many facts: when the checks
# dropped more than WEAK_SHARE of them, rules extract the rest of the run.
WEAK_AFTER_FACTS = 12
WEAK_SHARE = 0.5
# ... or when this many chunks (and over WEAK_SHARE of those asked) had no usable answer.
WEAK_CHUNKS = 2


def ingest(
    bank: BankHandle,
    path_or_document: str | Path | Document | Sequence[Document],
    format: str = "auto",
    mode: str = "auto",
    force: bool = False,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
    llm: LanguageModel | None = None,
    replace: bool = False,
) -> IngestReport:
    """Retain one file (every conversation in it) or Document(s) into `bank`.

    `replace`: a Document whose id the bank holds with other content takes its
    place in the same transaction that writes it (Hindsight's retain under a
    document id again), so a crash never leaves the bank with neither.

    mode: "llm" (needs a reachable model: `llm`, else the engine's configured
    one), "rules", "verbatim" (each turn one unit) or "auto" (llm when a model
    is configured and answers, else rules). Raises CancelledError when
    cancelled (the document in progress leaves nothing behind), InvalidInputError
    for unreadable input or an unknown mode."""
    started = time.perf_counter()
    documents = _documents(path_or_document, format)
    run = _Run(bank, mode, force, progress, cancel, llm)
    run.replace = replace
    try:
        run.plan_progress(documents)
        # Many documents (an agent's retain: one turn each) are one batch: the
        # search indexes catch up once. (Embedding them in one call was measured
        # too: on this 2-core machine under load it was slower than one call each.)
        batch = bank.store.deferred_indexes() if len(documents) > 1 else nullcontext()
        with batch:
            for document in documents:
                run.ingest_document(document)
    finally:
        run.close()
    run.report._time("total", time.perf_counter() - started)
    return run.report


def append(
    bank: BankHandle,
    document_id: str,
    turns: Sequence[Turn],
    mode: str = "auto",
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
    llm: LanguageModel | None = None,
) -> IngestReport:
    """Add `turns` to the stored document `document_id`, after its own, and
    retain only them: the document's earlier memories (and their curation)
    stay. One transaction; the turns are renumbered after the stored ones."""
    started = time.perf_counter()
    con = bank.store.reader()
    stored = stored_document(con, document_id)
    first = 1 + max((t.index for t in stored.turns), default=-1)
    taken = {t.id for t in stored.turns}
    added: list[Turn] = []
    for n, turn in enumerate(turns):
        turn_id = turn.id if turn.id and turn.id not in taken else f"t{first + n}"
        while turn_id in taken:
            turn_id = f"{turn_id}'"
        taken.add(turn_id)
        added.append(dc_replace(turn, id=turn_id, index=first + n))
    whole = dc_replace(stored, turns=stored.turns + tuple(added), content_hash="")
    new = dc_replace(stored, turns=tuple(added), content_hash="")
    run = _Run(bank, mode, False, progress, cancel, llm)
    try:
        run.plan_progress([new])
        run.ingest_document(new, append_to=(document_id, content_hash(whole)))
    finally:
        run.close()
    run.report._time("total", time.perf_counter() - started)
    return run.report


def _documents(source: Any, format: str) -> list[Document]:
    if isinstance(source, Document):
        return [source]
    if isinstance(source, str | Path):
        from core.retain.importers import load_documents

        return load_documents(source, format)
    if isinstance(source, Sequence) and all(isinstance(d, Document) for d in source):
        return list(source)
    raise InvalidInputError(
        f"cannot ingest {type(source).__name__}: give a file path or a Document"
    )


# -- one run ----------------------------------------------------------------------------


class _Run:
    def __init__(
        self,
        bank: BankHandle,
        mode: str,
        force: bool,
        progress: Progress | None,
        cancel: CancelToken | None,
        llm: LanguageModel | None,
    ) -> None:
        self.bank = bank
        self.force = force
        self.replace = False  # a document under a stored id with other content replaces it
        self.progress = progress
        self.cancel = cancel
        profile = bank.profile()
        self.config = profile.config
        self.agent = profile.agent_name.strip()
        self.bank_agent = BankAgent(self.agent)
        self._choice: ModelChoice | None = None  # None: no model was considered
        self.notes: list[str] = []
        self.auto = str(mode).strip().lower() == "auto"
        self.mode, self.lm = self._choose_mode(mode, llm)
        self.extractor = self._extractor()
        self.report = IngestReport(
            mode=str(self.mode), model=self.lm.name if self.lm else "", notes=self.notes
        )
        self.done = 0
        self.total = 0
        # Consecutive chunks lost to a dead or silent server; at DOWN_AFTER the
        # model is taken as down for the rest of the run.
        self._down_streak = 0
        self.model_down: str | None = None
        self.chunk_steps = CHUNK_STEPS if self.mode is ExtractionMode.LLM else 1
        self._rules = None  # auto mode's rules, once the model proved too weak
        self._asked = 0  # chunks asked of the model
        self._invalid = 0  # of those, with no usable answer after the retries
        self._reply_tokens = 0  # streamed pieces of the chunks extracted so far
        self._replies = 0

    # -- mode ------------------------------------------------------------------

    def _choose_mode(
        self, mode: str, llm: LanguageModel | None
    ) -> tuple[ExtractionMode, LanguageModel | None]:
        mode = str(mode).strip().lower()
        if mode not in MODES:
            raise InvalidInputError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if mode == "verbatim":
            return ExtractionMode.VERBATIM, None
        if mode == "rules":
            return ExtractionMode.RULES, None
        from core.providers.llm import LanguageModelError, ModelChoice

        self._choice = ModelChoice(llm, self.bank.language_model)
        status = self._choice.status
        if self._choice.model is not None:
            return ExtractionMode.LLM, self._choice.model
        if mode == "llm":
            if status.state == "none":
                raise InvalidInputError(
                    "llm mode needs a language model: choose an Ollama model in Settings "
                    "(or run with --mode rules)"
                )
            raise LanguageModelError(
                f"llm mode: {status.reason} (or run with --mode rules)",
                "model" if status.state == "missing" else "unreachable",
            )
        if status.state != "none":
            # Say why: "auto" silently meaning rules hides a dead server or a missing pull.
            self.notes.append(f"auto mode fell back to offline rules: {status.reason}")
        return ExtractionMode.RULES, None

    def _extractor(self):
        if self.mode is ExtractionMode.LLM:
            from core.retain.llm_extract import LlmExtractor

            return LlmExtractor(self.lm)
        from core.retain.rules import RulesExtractor

        return RulesExtractor()

    def _note_failure(self, error: ExtractionError) -> None:
        if getattr(error, "kind", "") in ("unreachable", "timeout"):
            self._down_streak += 1
            if self._down_streak >= DOWN_AFTER:
                self.model_down = str(error)
        else:
            self._down_streak = 0

    def close(self) -> None:
        closer = getattr(self.extractor, "close", None)
        if callable(closer):
            closer()
        if self._choice is not None:
            self._choice.close()

    # -- progress --------------------------------------------------------------

    def plan_progress(self, documents: Sequence[Document]) -> None:
        # Each chunk is a step; embedding and writing are one step each per document.
        for document in documents:
            self.total += self._chunk_count(document) + 2

    def _chunk_count(self, document: Document) -> int:
        """The document's extraction steps: its chunks (each `chunk_steps`)."""
        if self.mode is ExtractionMode.VERBATIM:
            return 1
        return max(1, len(chunk_exchanges(document))) * self.chunk_steps

    def step(self, message: str, n: int = 1) -> None:
        self.done = min(self.done + n, self.total)
        report(self.progress, self.done, self.total, message)

    # -- one document ----------------------------------------------------------

    def ingest_document(self, document: Document, append_to: tuple[str, str] | None = None) -> None:
        """Retain one document; with `append_to` (its id, the whole document's new
        content hash), `document` is the turns added to a stored one."""
        bank = self.bank
        check_document(document)
        title = document.title or "conversation"
        retry: frozenset[str] | None = None  # the turns of the chunks to extract again
        if append_to is not None:
            document_id, digest = append_to
            existing, replaced = None, []
        else:
            digest = content_hash(document)
            existing = stored_with_hash(bank.store.reader(), digest)
            steps = self._chunk_count(document) + 2
            replacing = False
            if existing is None and self.replace and document.id:
                # Other content under a stored id: written in its place, in one transaction.
                existing = stored_with_id(bank.store.reader(), document.id)
                replacing = existing is not None
            if existing and not self.force and not replacing:
                failed = failures_of(bank.store.reader(), existing[0])
                if not failed:
                    self.report.documents.append(DocumentResult(existing[0], title, "skipped"))
                    self.step(f"{title}: already in the bank, skipped", steps)
                    return
                # Stored but partial: extract again exactly the chunks that failed.
                retry = frozenset(t for f in failed for t in f.turn_ids)
            document_id = (
                existing[0] if existing else new_document_id(bank.store.reader(), document, digest)
            )
            # A retry adds to the document; a forced re-ingest replaces what it wrote.
            replaced = (
                units_of(bank.store.reader(), existing[0]) if existing and retry is None else []
            )

        t0 = time.perf_counter()
        extraction = self._extract(document, document_id, title, retry)
        self.report._time("extract", time.perf_counter() - t0)
        status = "ingested" if retry is None else "retried"
        result = DocumentResult(document_id, title, status, turns=len(document.turns))
        result.retried_chunks = extraction.chunks if retry is not None else 0
        self.report.failures += extraction.failures
        result.failed_chunks = len(extraction.failures)
        if retry is None and extraction.failures and len(extraction.failures) >= extraction.chunks:
            result.status = "failed"
            self.report.documents.append(result)
            self.step(f"{title}: no chunk could be extracted; nothing written", 2)
            return

        check(self.cancel)
        t0 = time.perf_counter()
        vectors = self.embed([f.text for f in extraction.facts])
        self.report._time("embed", time.perf_counter() - t0)
        self.step(f"{title}: embedded {len(extraction.facts)} facts")

        check(self.cancel)
        t0 = time.perf_counter()
        plan = plan_document(self, document, document_id, extraction.facts, vectors, replaced)
        self.report._time("plan", time.perf_counter() - t0)

        check(self.cancel)
        t0 = time.perf_counter()
        change = write_document(
            bank.store,
            self.report,
            self.mode,
            document,
            document_id,
            digest,
            existing,
            replaced,
            plan,
            extraction.failures,
            retry=retry is not None,
            appended=append_to is not None,
        )
        self.report._time("write", time.perf_counter() - t0)
        self.step(f"{title}: written")

        self._account(result, plan, change)
        if retry is None:
            self.report.turns += len(document.turns)

    # -- step 1: extract ---------------------------------------------------------

    def _extract(
        self,
        document: Document,
        document_id: str,
        title: str,
        only: frozenset[str] | None = None,
    ) -> Extraction:
        """The document's facts, chunk by chunk; with `only`, just the chunks that
        share a turn with it (a retry of failed chunks; `chunks` counts those)."""
        turns = {t.id: t for t in document.turns}
        if self.mode is ExtractionMode.VERBATIM:
            check(self.cancel)
            facts = [
                clean_fact(f, turns, (f.source_ids[0],), 0, agent=self.bank_agent)
                for f in verbatim_facts(document, self.agent, known_names(self.bank.store.reader()))
            ]
            self.step(f"{title}: {len(facts)} turns")
            return Extraction([f for f in facts if f is not None], [], 1)
        exchanges = chunk_exchanges(document)
        # Names found in earlier exchanges are known to the later ones ("Priya" at
        # the start of a sentence is a name once she was named mid-sentence).
        known = known_names(self.bank.store.reader())
        seen = {n.casefold() for n in known}
        facts: list[Fact] = []
        failures: list[ChunkFailure] = []
        attempted = 0
        n = self.chunk_steps
        for i, exchange in enumerate(exchanges):
            check(self.cancel)
            where = f"{title}: chunk {i + 1}/{len(exchanges)}"
            if only is not None and not only.intersection(exchange.turn_ids):
                self.step(f"{where} already extracted", n)
                continue
            attempted += 1
            if self.model_down is not None:
                # The server stopped answering: the rest would only wait for timeouts.
                reason = f"not attempted: the language model stopped answering ({self.model_down})"
                failures.append(ChunkFailure(document_id, title, exchange.turn_ids, reason))
                self.step(f"{where} skipped", n)
                continue
            start = self.done
            try:
                extracted = self._extract_chunk(exchange, known, where)
            except ExtractionError as error:
                failures.append(ChunkFailure(document_id, title, exchange.turn_ids, str(error)))
                self._note_failure(error)
                self.done = start
                self.step(f"{where} failed", n)
                continue
            self.done = start
            self._down_streak = 0
            base = len(facts)
            for fact in extracted:
                cleaned = clean_fact(
                    fact, turns, exchange.turn_ids, base, exchange.when, self.bank_agent
                )
                if cleaned is not None:
                    facts.append(cleaned)
                    learn_names(known, seen, (m.name for m in cleaned.mentions))
            self.step(f"{title}: extracted chunk {i + 1}/{len(exchanges)}", n)
        return Extraction(facts, failures, attempted if only is not None else max(1, attempted))

    def _too_weak(self) -> bool:
        """`auto` only: the checks dropped most of what the model gave; say so
        and let rules extract the rest of the run."""
        r = self.report
        if not self.auto or self.mode is not ExtractionMode.LLM or self._rules is not None:
            return self._rules is not None
        dropped = len(r.facts_dropped)
        weak_facts = r.model_facts >= WEAK_AFTER_FACTS and dropped > WEAK_SHARE * r.model_facts
        # Chunks whose every answer was unusable count too (nothing of them is kept).
        weak_chunks = self._invalid >= WEAK_CHUNKS and self._invalid > WEAK_SHARE * self._asked
        if not (weak_facts or weak_chunks):
            return False
        from core.retain.rules import RulesExtractor

        self._rules = RulesExtractor()
        model = self.lm.name if self.lm else "the model"
        self.notes.append(
            f"auto mode switched to offline rules after {self._asked} chunks: '{model}' is too"
            f" weak for this conversation (the checks dropped {dropped} of its"
            f" {r.model_facts} facts; {self._invalid} chunks had no usable answer)"
        )
        return True

    def _extract_chunk(self, exchange, known: list[str], where: str) -> list:
        """One chunk through the extractor; in llm mode its progress steps fill as
        the reply streams, and a cancel stops the reply mid-way."""
        if self._too_weak():
            assert self._rules is not None
            return self._rules.extract(exchange, self.agent, known)
        if self.mode is not ExtractionMode.LLM:
            return self.extractor.extract(exchange, self.agent, known)
        start, total = self.done, self.total
        expected = self._reply_tokens / self._replies if self._replies else EXPECTED_REPLY_TOKENS
        most = [0]

        def on_tokens(count: int) -> None:
            check(self.cancel)
            most[0] = max(most[0], count)
            filled = min(self.chunk_steps - 1, int(most[0] / expected * self.chunk_steps))
            self.done = min(start + filled, total)
            report(self.progress, self.done, total, f"{where}: {most[0]} tokens written")

        report(self.progress, start, total, f"{where}: the model is reading it")
        self._asked += 1
        try:
            facts = self.extractor.extract(exchange, self.agent, known, on_tokens=on_tokens)
        except ExtractionError as error:
            if getattr(error, "kind", "") == "invalid":
                self._invalid += 1
            raise
        finally:
            if most[0]:
                self._reply_tokens += most[0]
                self._replies += 1
        self._record_checks(exchange, where.split(": chunk")[0])
        return facts

    def _record_checks(self, exchange, title: str) -> None:
        """What the checks did to the model's facts, in the report."""
        for checked in self.extractor.take_checks():
            self.report.model_facts += len(checked.facts) + len(checked.dropped)
            for verdicts, dropped in ((checked.dropped, True), (checked.repaired, False)):
                self.report.checked += [
                    CheckedFact(title, exchange.turn_ids, v.text, v.reason, dropped)
                    for v in verdicts
                ]

    # -- step 2: embed -----------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        embedder = self.bank.embedder
        parts = []
        for start in range(0, len(texts), EMBED_BATCH):
            check(self.cancel)
            parts.append(embedder.embed(list(texts[start : start + EMBED_BATCH])))
        if not parts:
            return np.zeros((0, self.bank.store.dim), dtype=np.float32)
        return np.vstack(parts).astype(np.float32, copy=False)

    # -- step 3: plan asks the run ---------------------------------------------

    def assessment(
        self,
        evidence: str,
        state: OpinionState,
        similarity: float,
        shared_entity: bool,
        plan: OpinionPlan,
        same_holder: bool = False,
        participants: frozenset[str] = frozenset(),
    ) -> Assessment:
        if self.lm is not None and self.mode is ExtractionMode.LLM and self.model_down is None:
            check(self.cancel)
            from core.providers.llm import LanguageModelError

            try:
                return assess_llm(self.lm, evidence, state.text, state.confidence)
            except LanguageModelError as error:
                plan.fallbacks.append(str(error))
                if error.kind in ("unreachable", "timeout"):
                    self.model_down = str(error)
        return assess_rules(
            evidence,
            state.text,
            similarity,
            shared_entity,
            same_holder,
            float(self.config["retain.opinion_holder_similarity"]),
            state.holders,
            participants,
        )

    # -- the report --------------------------------------------------------------

    def _account(self, result: DocumentResult, plan: Plan, change: Change) -> None:
        r = self.report
        for unit in plan.units:
            r.facts[str(unit.network)] = r.facts.get(str(unit.network), 0) + 1
        result.facts = len(plan.units)
        r.duplicates_merged += plan.duplicates
        r.entities_new += len(plan.resolver.new_entities)
        r.entities_matched += plan.resolver.matched
        r.entities_merged += plan.resolver.merged
        for kind, count in plan.links.counts().items():
            r.links[kind] = r.links.get(kind, 0) + count
        r.opinions_formed += sum(1 for e in plan.opinions.events if e.relation == FORMED)
        r.opinions_updated += plan.opinions.assessed
        r.opinion_events += len(plan.opinions.events)
        r.jobs_queued += len(change.added.get(Kind.JOB, ()))
        r.documents.append(result)
        r.change = r.change | change


__all__ = ["MODES", "append", "ingest"]
