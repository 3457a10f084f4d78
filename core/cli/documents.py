"""`engram documents list|show|delete|reingest BANK [DOCUMENT]`: ingested conversations."""

from __future__ import annotations

import argparse

from core import INGEST_MODES as MODES
from core import Engine
from core.cli import add_actor_option
from core.cli.jobs import pending_hint, run_pending
from core.cli.output import ask, print_json, progress_printer, short_time


def register(sub: argparse._SubParsersAction) -> None:
    docs = sub.add_parser("documents", help="ingested documents: list, show, delete, re-ingest")
    docs_sub = docs.add_subparsers(dest="documents_command", metavar="ACTION", required=True)
    lst = docs_sub.add_parser("list", help="the bank's documents")
    lst.add_argument("bank")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=list_documents)
    show = docs_sub.add_parser("show", help="a document's turns")
    show.add_argument("bank")
    show.add_argument("document")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=show_document)
    delete = docs_sub.add_parser(
        "delete", help="delete a document and everything derived only from it (undoable)"
    )
    delete.add_argument("bank")
    delete.add_argument("document")
    delete.add_argument("--preview", action="store_true", help="only show what would go")
    delete.add_argument("--yes", action="store_true", help="do not ask to confirm")
    delete.add_argument("--no-jobs", action="store_true", help="leave the rebuilds queued")
    add_actor_option(delete)
    delete.set_defaults(handler=delete_document)
    again = docs_sub.add_parser("reingest", help="extract a document again from its turns")
    again.add_argument("bank")
    again.add_argument("document")
    again.add_argument("--mode", default="auto", choices=MODES)
    again.add_argument(
        "--failed",
        action="store_true",
        help="extract only the chunks that failed (a partial document's facts stay)",
    )
    again.add_argument("--quiet", action="store_true")
    again.set_defaults(handler=reingest_document)


def list_documents(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    docs = bank.documents()
    if args.json:
        print_json(docs)
        return 0
    if not docs:
        print("no documents")
    for d in docs:
        partial = f"  PARTIAL: {d.failed_chunks} chunk(s) failed" if d.partial else ""
        print(
            f"{d.id}  {short_time(d.created_at)}  {d.turns:>4} turn(s) {d.units:>5} unit(s)"
            f"  {d.extraction_mode or '-':<8} {d.title}{partial}"
        )
    if any(d.partial for d in docs):
        print(
            "partial documents: `engram ingest` of the same file (or `engram documents"
            " reingest BANK DOCUMENT --failed`) extracts exactly their failed chunks"
        )
    return 0


def show_document(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    turns = bank.turns(args.document)
    if args.json:
        # The turns, as before; `documents list --json` carries failed_chunks.
        print_json(turns)
        return 0
    if not turns and args.document not in {d.id for d in bank.documents()}:
        print(f"engram: no document {args.document!r} in bank {bank.name!r}")
        return 1
    failures = bank.document_failures(args.document)
    failed_turns = {t for f in failures for t in f.turn_ids}
    for t in turns:
        mark = "  (FAILED: not extracted)" if t.id in failed_turns else ""
        print(f"[{t.id}] {short_time(t.timestamp)}  {t.speaker}: {t.text}{mark}")
    if failures:
        print(f"PARTIAL: {len(failures)} chunk(s) could not be extracted:")
        for f in failures:
            print(f"  [{', '.join(f.turn_ids)}]: {f.reason}")
        print(f"retry them: engram documents reingest {bank.name} {args.document} --failed")
    return 0


def print_document_preview(p) -> None:
    print(f"document {p.title!r} ({p.document_id}): {p.turns} turn(s) go, and")
    print(f"  {len(p.units)} unit(s) extracted from it, with {p.links} link(s):")
    for fact in p.units:
        print(f"    - [{fact.network}] {fact.text}")
    if p.opinion_events:
        print(
            f"  {p.opinion_events} step(s) of {len(p.opinions_revised)} opinion(s) it was"
            " evidence for (their confidence is replayed without them)"
        )
    if p.entities_removed:
        print(f"  entities only it mentions: {', '.join(p.entities_removed)}")
    if p.observations_rebuilt:
        print(f"  observations rebuilt: {', '.join(p.observations_rebuilt)}")


def delete_document(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    preview = bank.document_preview(args.document)
    print_document_preview(preview)
    if args.preview:
        return 0
    if not args.yes:
        answer = ask(
            "Delete it? `engram undo` brings it back. [y/N] ",
            f"not deleting document {preview.title!r}",
        )
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    change = bank.delete_document(args.document)
    print(f"deleted document {preview.title!r} ({len(preview.units)} unit(s)); undo brings it back")
    failed = 0 if args.no_jobs else run_pending(bank, engine)
    pending = bank.pending_jobs() if args.no_jobs else 0
    if pending:
        print(pending_hint(bank, pending))
    return 1 if failed or change.empty else 0


def reingest_document(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    lm = engine.language_model() if args.mode in ("auto", "llm") else None
    try:
        progress = None if args.quiet else progress_printer("reingest")
        report = bank.reingest_document(
            args.document, args.mode, failed_only=args.failed, progress=progress, llm=lm
        )
        print(report.summary())
    finally:
        if lm is not None:
            lm.close()
    failed = run_pending(bank, engine)
    return 1 if report.failures or failed else 0
