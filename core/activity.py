"""Every operation on a bank, journaled: what `Bank`'s `@journaled` methods record.

`journaled(kind)` wraps a `Bank` method: it times the call, and records who
asked (the request context, core/context.py), the arguments (size-capped),
the outcome and, for a write, the `Change`; for a recall, the packed unit ids,
the token count and the whole result (its typed trace) for the studio to
replay. A call made inside another journaled call (a re-ingest's ingest) is
part of it, not an entry of its own. Recording never fails an operation: a
journal that cannot write logs it and the operation goes on.

A bank's `journal.*` settings turn recording off and bound what is kept.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.context import Caller, current_caller, noting
from core.journal.entry import (
    CANCELLED,
    ERROR,
    OK,
    RECALL,
    ActivityEntry,
    capped,
)
from core.journal.store import Journal
from core.types import CancelledError, Change, Document, Kind

if TYPE_CHECKING:
    from core.handle import BankHandle

log = logging.getLogger(__name__)

# Never kept: the progress callback, the cancel token, a language model client.
NOT_KEPT = frozenset({"self", "progress", "cancel", "llm"})
PROFILE_WRITES = frozenset({"set_profile", "reset_config"})  # the journal's settings may change
SETTINGS_TTL = 5.0  # seconds
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("engram_journaled", default=False)


class Activity:
    """The journal of one bank, as its operations see it."""

    def __init__(self, handle: BankHandle) -> None:
        self.handle = handle
        self.journal = Journal(handle.folder, limits=self.limits)
        self._settings: tuple[int, Mapping[str, Any]] | None = None

    def settings(self) -> Mapping[str, Any]:
        """The bank's `journal.*` settings: read again after the profile changed
        through this bank, or after SETTINGS_TTL (not on every write: a recall's
        access count is one, and reading the profile costs half a millisecond)."""
        now = time.monotonic()
        if self._settings is None or now - self._settings[0] > SETTINGS_TTL:
            config = self.handle.config
            self._settings = (now, {k: v for k, v in config.items() if k.startswith("journal.")})
        return self._settings[1]

    def recording(self) -> bool:
        return bool(self.settings().get("journal.record", True))

    def limits(self) -> tuple[float, float]:
        s = self.settings()
        return float(s.get("journal.keep_days", 0) or 0), float(s.get("journal.keep_mb", 0) or 0)

    def run(self, kind: str, operation: str, arguments: dict[str, Any], call: Callable[[], Any]):
        try:
            return self._run(kind, operation, arguments, call)
        finally:
            if operation in PROFILE_WRITES:
                self._settings = None  # journal.record or its bounds may have changed

    def _run(self, kind: str, operation: str, arguments: dict[str, Any], call: Callable[[], Any]):
        if _inside.get() or self.handle.store.closed or not self._recording_safely():
            return call()
        asked = _Call(kind, operation, arguments, current_caller())
        token = _inside.set(True)
        try:
            with noting() as asked.notes:
                # Recorded once it is over: the journal's writer waits for no
                # operation to be running, and a write waits for its entry.
                try:
                    with self.journal.operation():
                        result = call()
                except BaseException as error:
                    outcome = CANCELLED if isinstance(error, CancelledError) else ERROR
                    self._record(asked, outcome=outcome, error=error)
                    raise
                self._record(asked, result=result)
                return result
        finally:
            _inside.reset(token)

    def _recording_safely(self) -> bool:
        try:
            return self.recording()
        except Exception:  # a damaged profile must not stop the operation
            return True

    def _record(
        self,
        asked: _Call,
        *,
        result: Any = None,
        outcome: str = OK,
        error: BaseException | None = None,
    ) -> None:
        kind, operation, arguments = asked.kind, asked.operation, asked.arguments
        try:
            change = _change_of(result)
            if operation == "purge_entity" and change is not None:
                # What a purge removed must not outlive it, not even as ids.
                change = Change.of(
                    added=change.added,
                    updated=change.updated,
                    removed={k: v for k, v in change.removed.items() if k is not Kind.UNIT},
                )
            entry = ActivityEntry(
                id=0,
                started_at=asked.started_at,
                duration_ms=(time.perf_counter() - asked.start) * 1000,
                actor=asked.caller.actor,
                transport=asked.caller.transport,
                kind=kind,
                operation=operation,
                outcome=outcome,
                summary=summarize(operation, arguments, result, asked.notes, error),
                error=(str(error) or type(error).__name__) if error is not None else "",
                arguments=capped({k: _described(v) for k, v in arguments.items()}),
                change=change if change is not None and not change.empty else None,
                tokens=getattr(result, "tokens_used", None) if kind == RECALL else None,
                unit_ids=tuple(getattr(result, "unit_ids", ())) if kind == RECALL else (),
            )
            # A write's entry is committed before its caller hears back; a read's
            # follows off the critical path (core/journal/store.py).
            self.journal.record(
                entry,
                _detail(result) if outcome == OK else None,
                durable=kind != RECALL,
                began=asked.began,
            )
        except Exception:
            log.exception(
                "the journal could not record %s on bank %s", operation, self.handle.folder
            )

    def close(self) -> None:
        self.journal.close()


@dataclass
class _Call:
    """One journaled call as it runs: what was asked, by whom, since when."""

    kind: str
    operation: str
    arguments: dict[str, Any]
    caller: Caller
    started_at: datetime = field(default_factory=lambda: _utcnow())
    began: float = field(default_factory=time.monotonic)  # what a purge compares
    start: float = field(default_factory=time.perf_counter)  # what the duration counts
    notes: list = field(default_factory=list)


def journaled(kind: str):
    """Journal every call of this `Bank` method as an operation of `kind`."""

    def wrap(method):
        signature = inspect.signature(method)
        operation = method.__name__

        @functools.wraps(method)
        def run(self, *args: Any, **kwargs: Any):
            def call():
                return method(self, *args, **kwargs)

            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError:
                return call()  # the method itself says what is wrong
            given: dict[str, Any] = {}
            for name, value in bound.arguments.items():
                if name in NOT_KEPT:
                    continue
                if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                    given.update((k, v) for k, v in value.items() if k not in NOT_KEPT)
                else:
                    given[name] = value
            return self._activity.run(kind, operation, given, call)

        run.journaled = kind
        return run

    return wrap


# -- what an entry says -------------------------------------------------------------


def _described(value: Any) -> Any:
    """An argument as the journal keeps it: a conversation by its shape, not its text."""
    if isinstance(value, Document):
        return {"document": value.title, "id": value.id, "turns": len(value.turns)}
    if isinstance(value, list | tuple) and value and all(isinstance(v, Document) for v in value):
        return {
            "documents": len(value),
            "titles": [d.title for d in value[:10]],
            "turns": sum(len(d.turns) for d in value),
        }
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return value.to_dict()
    return value


def _change_of(result: Any) -> Change | None:
    if isinstance(result, Change):
        return result
    change = getattr(result, "change", None)
    return change if isinstance(change, Change) else None


def _detail(result: Any) -> Callable[[], Any] | None:
    """The heavy part kept compressed: made on the journal's writer thread."""
    to_dict = getattr(result, "to_dict", None)
    if callable(to_dict):
        return to_dict
    return None


def _short(text: Any, width: int = 70) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def summarize(
    operation: str,
    arguments: Mapping[str, Any],
    result: Any,
    notes: list,
    error: BaseException | None = None,
) -> str:
    """One line for the activity feed: "“Where are the bees?” → 4 facts · top: …",
    "retained 3 facts", "retracted entity 'Dana' (5 unit(s) hidden)"."""
    if operation == "recall":
        query = f"“{_short(arguments.get('query'), 60)}”"
        if error is not None:
            return f"{query} failed"
        items = getattr(result, "items", ())
        top = f" · top: {_short(items[0].text, 60)}" if items else ""
        return f"{query} → {_count(len(items), 'fact')}, {result.tokens_used} tokens{top}"
    if error is not None:
        return f"{operation.replace('_', ' ')} failed: {_short(error, 80)}"
    audits = [n[2] for n in notes if isinstance(n, tuple) and n and n[0] == "audit"]
    if audits:
        return "; ".join(audits)
    if operation in ("ingest", "reingest_document", "append_turns"):
        facts = getattr(result, "facts_total", 0)
        docs = getattr(result, "documents_ingested", 0)
        skipped = getattr(result, "documents_skipped", 0)
        text = f"retained {_count(facts, 'fact')} from {_count(docs, 'document')}"
        if skipped:
            text += f" ({skipped} already in the bank)"
        failures = getattr(result, "failures", ())
        if failures:
            text += f"; {_count(len(failures), 'chunk')} failed"
        return text
    if operation == "add_units":
        change = _change_of(result)
        return f"added {_count(len(change.ids(Kind.UNIT)) if change else 0, 'unit')}"
    if operation in ("process_jobs", "rebuild_observations"):
        if result is None:
            return "no observation to rebuild"
        return f"rebuilt {_count(result.observations_written, 'observation')} ({result.mode})"
    if operation in ("reflect", "compare"):
        query = f"“{_short(arguments.get('query'), 60)}”"
        answer = getattr(result, "answer", None)
        if answer is None and hasattr(result, "answers"):
            return f"compared {len(result.answers)} dispositions on {query}"
        return f"{query} → {_short(answer, 60)}"
    if operation == "commit_reflection":
        change = _change_of(result)
        opinions = len(change.ids(Kind.OPINION)) if change else 0
        return f"kept a reflection ({_count(opinions, 'opinion')} formed or updated)"
    if operation == "set_profile":
        changed = [k for k, v in arguments.items() if v is not None]
        return "changed the bank's " + (", ".join(changed) or "profile")
    if operation == "reset_config":
        return "reset the bank's settings to the defaults"
    if operation == "repair":
        return "repaired the indexes"
    return operation.replace("_", " ")


def _utcnow() -> datetime:
    from datetime import UTC

    return datetime.now(UTC).replace(tzinfo=None)


__all__ = ["Activity", "journaled", "summarize"]
