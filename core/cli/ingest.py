"""`engram ingest BANK FILE... [--format F] [--mode M] [--force]`: retain conversations.

Each file is ingested in turn (every conversation in it, one transaction per
conversation), then the queued observation jobs run. Ctrl-C stops before the
next chunk: the conversation in progress leaves nothing behind.
"""

from __future__ import annotations

import argparse
import sys

from core import INGEST_FORMATS as FORMATS
from core import INGEST_MODES as MODES
from core import Engine
from core.cli import add_timeout_option
from core.cli.output import print_json, progress_printer


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help="retain conversation files into a bank",
        description="Extract facts from conversation files into a bank's memory graph.",
    )
    p.add_argument("bank")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--format", default="auto", choices=["auto", *FORMATS])
    p.add_argument(
        "--mode",
        default="auto",
        choices=MODES,
        help="llm: the Ollama model; rules: offline rules; verbatim: each turn one unit; "
        "auto (default): llm when a model is configured and answers, else rules",
    )
    p.add_argument("--force", action="store_true", help="ingest again what is already in the bank")
    p.add_argument("--no-observations", action="store_true", help="leave observation jobs queued")
    p.add_argument("--ollama-model", help="use this Ollama model (overrides Settings)")
    p.add_argument("--ollama-host", help="Ollama address (overrides Settings)")
    add_timeout_option(p)
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=ingest_files)


def _language_model(args, engine: Engine):
    if not (args.ollama_model or args.ollama_host):
        return engine.language_model()
    from core import LlmSettings, open_model

    settings = engine.settings
    return open_model(
        LlmSettings(
            host=args.ollama_host or settings.ollama_host,
            model=args.ollama_model or settings.ollama_model,
            timeout=settings.ollama_timeout,
            provider=settings.llm_provider,
        )
    )


def ingest_files(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    lm = _language_model(args, engine) if args.mode in ("auto", "llm") else None
    reports = []
    failed = False
    try:
        for path in args.files:
            progress = None if args.quiet or args.json else progress_printer(f"ingest {path}")
            report = bank.ingest(
                path, args.format, args.mode, force=args.force, progress=progress, llm=lm
            )
            reports.append((path, report))
            failed = failed or bool(report.failures)
            if not args.json:
                print(f"== {path}")
                print(report.summary())
        jobs = None
        if not args.no_observations and bank.pending_jobs():
            progress = None if args.quiet or args.json else progress_printer("observations")
            use_lm = lm if reports and reports[-1][1].mode == "llm" else None
            jobs = bank.process_jobs(llm=use_lm, progress=progress)
            if not args.json:
                print(
                    f"observations: {jobs.observations_written} written, "
                    f"{jobs.observations_removed} removed ({jobs.mode})"
                    + (f", {len(jobs.failed)} failed" if jobs.failed else "")
                    + (f"; {jobs.fallback_note()}" if jobs.fallback_note() else "")
                    + (
                        f"; {len(jobs.unsupported)} sentence(s) the facts do not support cut"
                        if jobs.unsupported
                        else ""
                    )
                )
    finally:
        if lm is not None:
            lm.close()
    if args.json:
        print_json(
            {
                "files": [
                    {
                        "file": path,
                        **{k: v for k, v in vars(r).items() if k != "change"},
                        "documents_ingested": r.documents_ingested,
                        "documents_skipped": r.documents_skipped,
                        "documents_retried": r.documents_retried,
                    }
                    for path, r in reports
                ],
                "observations": None
                if jobs is None
                else {k: v for k, v in vars(jobs).items() if k != "change"},
            }
        )
    if failed:
        print("engram: some chunks failed; nothing of them was written", file=sys.stderr)
    return 1 if failed else 0
