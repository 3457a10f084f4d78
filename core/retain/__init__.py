"""Retain: conversations into the four-network memory graph.

`ingest` (pipeline.py) runs importers -> extraction (facts.py) -> entities,
links, opinions (plan.py) -> one transaction per document (write.py), and
reports what it did (report.py); `process_jobs` (observations.py)
regenerates entity observations afterwards. The names are loaded on first use,
so importing `core.retain.importers` alone stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.retain.observations import JobsReport, process_jobs
    from core.retain.opinions import apply_evidence
    from core.retain.pipeline import ingest
    from core.retain.report import ChunkFailure, IngestReport

__all__ = [
    "ChunkFailure",
    "IngestReport",
    "JobsReport",
    "apply_evidence",
    "ingest",
    "process_jobs",
]

_WHERE = {
    "ChunkFailure": "core.retain.report",
    "IngestReport": "core.retain.report",
    "ingest": "core.retain.pipeline",
    "JobsReport": "core.retain.observations",
    "process_jobs": "core.retain.observations",
    "apply_evidence": "core.retain.opinions",
}


__getattr__, __dir__ = lazy_exports("core.retain", _WHERE, globals())
