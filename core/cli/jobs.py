"""`engram jobs list|run BANK`: the background work curation and retain queue.

Observations are rebuilt by jobs; curation hides what it made stale at once,
and these jobs bring the rebuilt profiles back.
"""

from __future__ import annotations

import argparse
import shlex

from core import Engine
from core.cli.output import print_json, progress_printer


def register(sub: argparse._SubParsersAction) -> None:
    jobs = sub.add_parser("jobs", help="pending background jobs (observation rebuilds)")
    jobs_sub = jobs.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)
    count = jobs_sub.add_parser("list", help="how many jobs are pending")
    count.add_argument("bank")
    count.add_argument("--json", action="store_true")
    count.set_defaults(handler=list_jobs)
    run = jobs_sub.add_parser("run", help="run the pending jobs now")
    run.add_argument("bank")
    run.add_argument("--rules", action="store_true", help="rules profiles even if a model is set")
    run.add_argument("--quiet", action="store_true", help="no progress line")
    run.set_defaults(handler=run_jobs)


def pending_hint(bank, pending: int) -> str:
    """'N pending job(s): run `engram jobs run BANK`', the name quoted so the
    command can be pasted into a shell as it is ('Demo: Juniper' has a space).
    `pending`: the count the caller read (routed, each read is a request)."""
    hint = f": run `engram jobs run {shlex.quote(bank.name)}`" if pending else ""
    return f"{pending} pending job(s){hint}"


def list_jobs(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    pending = bank.pending_jobs()
    if args.json:
        print_json({"pending": pending})
    else:
        print(pending_hint(bank, pending))
    return 0


def run_pending(bank, engine: Engine, *, rules: bool = False, quiet: bool = False) -> int:
    """Run what is queued and print one line; returns the jobs that failed."""
    pending = bank.pending_jobs()
    if not pending:
        return 0
    lm = None if rules else engine.language_model()
    try:
        progress = None if quiet else progress_printer("observations")
        report = bank.process_jobs(llm=lm, progress=progress)
    finally:
        if lm is not None:
            lm.close()
    print(
        f"jobs: {report.processed} run, {report.observations_written} observation(s) rebuilt,"
        f" {report.observations_removed} removed ({report.mode})"
        + (f", {len(report.failed)} failed" if report.failed else "")
        + (f"; {report.fallback_note()}" if report.fallback_note() else "")
    )
    return len(report.failed)


def run_jobs(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    if not bank.pending_jobs():
        print("no pending jobs")
        return 0
    return 1 if run_pending(bank, engine, rules=args.rules, quiet=args.quiet) else 0
