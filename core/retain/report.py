"""What an ingest did: per document, per phase, and the chunks it could not read.

The CLI, the studio's ingest pane and the retain benchmark all read an
`IngestReport`; `ChunkFailure` is also what `failures_of` (documents.py) gives
back from the bank, so a failure looks the same whether it was just reported or
read back later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.types import Change


@dataclass(frozen=True)
class ChunkFailure:
    """A chunk that could not be extracted: nothing of it was written."""

    document_id: str
    document: str
    turn_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class CheckedFact:
    """A model's fact the checks dropped or repaired (core.retain.llm_checks)."""

    document: str
    turn_ids: tuple[str, ...]
    text: str  # as the model wrote it
    reason: str
    dropped: bool


@dataclass
class DocumentResult:
    id: str
    title: str
    # "ingested" | "skipped" (already in the bank, whole) | "failed" (no chunk
    # extracted, nothing written) | "retried" (stored partial: its failed chunks
    # were extracted again; `failed_chunks` failed again)
    status: str
    turns: int = 0
    facts: int = 0
    failed_chunks: int = 0
    retried_chunks: int = 0


@dataclass
class IngestReport:
    """What an ingest did, for the CLI, the studio's ingest pane and the benchmark."""

    mode: str = ""
    model: str = ""
    documents: list[DocumentResult] = field(default_factory=list)
    turns: int = 0
    facts: dict[str, int] = field(default_factory=dict)  # new units per network
    duplicates_merged: int = 0
    entities_new: int = 0
    entities_matched: int = 0  # surfaces resolved to an existing entity by name or alias
    entities_merged: int = 0  # surfaces merged into an entity by a fuzzy score
    links: dict[str, int] = field(default_factory=dict)  # pairs per kind
    opinions_formed: int = 0
    opinions_updated: int = 0
    opinion_events: int = 0
    jobs_queued: int = 0
    failures: list[ChunkFailure] = field(default_factory=list)
    # llm mode: the model's facts, kept as given or repaired, and those dropped
    checked: list[CheckedFact] = field(default_factory=list)
    model_facts: int = 0  # facts the model gave (before the checks)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    change: Change = field(default_factory=Change)

    @property
    def documents_ingested(self) -> int:
        return sum(1 for d in self.documents if d.status == "ingested")

    @property
    def documents_retried(self) -> int:
        return sum(1 for d in self.documents if d.status == "retried")

    @property
    def documents_skipped(self) -> int:
        return sum(1 for d in self.documents if d.status == "skipped")

    @property
    def facts_total(self) -> int:
        return sum(self.facts.values())

    @property
    def facts_dropped(self) -> list[CheckedFact]:
        return [c for c in self.checked if c.dropped]

    @property
    def facts_repaired(self) -> list[CheckedFact]:
        return [c for c in self.checked if not c.dropped]

    def check_summary(self) -> str:
        """One line: how many of the model's facts the checks kept, repaired, dropped, why."""
        if not self.model_facts:
            return ""
        dropped, repaired = self.facts_dropped, self.facts_repaired
        kept = self.model_facts - len(dropped)
        line = (
            f"model's facts: {self.model_facts} given, {kept} kept"
            f" ({len({c.text for c in repaired})} repaired), {len(dropped)} dropped"
        )
        causes: dict[str, int] = {}
        for c in dropped:
            key = c.reason.split(":", 1)[0]
            causes[key] = causes.get(key, 0) + 1
        if causes:
            line += ": " + "; ".join(
                f"{n} {k}" for k, n in sorted(causes.items(), key=lambda x: -x[1])
            )
        return line

    def _time(self, phase: str, seconds: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + seconds

    def summary(self) -> str:
        """A few lines for a person."""
        mode = self.mode + (f" ({self.model})" if self.model else "")
        networks = ", ".join(f"{n} {c}" for n, c in sorted(self.facts.items())) or "none"
        links = ", ".join(f"{k} {c}" for k, c in sorted(self.links.items())) or "none"
        # A document some of whose chunks failed is in, but not whole: say so.
        partly = [d for d in self.documents if d.status == "ingested" and d.failed_chunks]
        chunks = sum(d.failed_chunks for d in partly)
        partial = (
            f" ({len(partly)} partly: {chunks} chunk{'s' if chunks != 1 else ''} failed)"
            if partly
            else ""
        )
        retried = [d for d in self.documents if d.status == "retried"]
        if retried:
            again = sum(d.retried_chunks for d in retried)
            still = sum(d.failed_chunks for d in retried)
            partial += (
                f", {len(retried)} partial retried ({again} failed chunk"
                f"{'s' if again != 1 else ''} extracted again"
                + (f", {still} failed again" if still else ", now whole")
                + ")"
            )
        lines = [
            f"mode: {mode}",
            f"documents: {self.documents_ingested} ingested{partial}, {self.documents_skipped} skipped"
            + (
                f", {sum(1 for d in self.documents if d.status == 'failed')} failed"
                if any(d.status == "failed" for d in self.documents)
                else ""
            ),
            f"turns: {self.turns}",
            f"facts: {self.facts_total} ({networks}); {self.duplicates_merged} near-duplicates merged",
            f"entities: {self.entities_new} new, {self.entities_matched} matched by name, "
            f"{self.entities_merged} merged by similarity",
            f"links: {links}",
            f"opinions: {self.opinions_formed} formed, {self.opinions_updated} updated, "
            f"{self.opinion_events} events",
            f"observation jobs queued: {self.jobs_queued}",
        ]
        if self.check_summary():
            lines.append(self.check_summary())
        if self.timings:
            lines.append("time: " + ", ".join(f"{k} {v:.2f}s" for k, v in self.timings.items()))
        for failure in self.failures:
            turns = ", ".join(failure.turn_ids[:4]) + (" …" if len(failure.turn_ids) > 4 else "")
            lines.append(f"FAILED chunk of {failure.document} [{turns}]: {failure.reason}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


__all__ = ["CheckedFact", "ChunkFailure", "DocumentResult", "IngestReport"]
