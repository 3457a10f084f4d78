"""Snapshots: export, import, diff."""

from __future__ import annotations

import argparse
from pathlib import Path

from core import Engine
from core.cli.output import ask, count_arg, print_json, progress_printer


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="write a bank to one .engram snapshot file")
    export.add_argument("bank")
    export.add_argument("path", nargs="?", help="default: ./<bank>.engram")
    export.add_argument("--quiet", action="store_true")
    export.set_defaults(handler=export_bank)

    imp = sub.add_parser("import", help="import a .engram snapshot as a bank")
    imp.add_argument("path")
    imp.add_argument("--name", help="the bank's name (default: the name it was exported with)")
    imp.add_argument(
        "--replace", action="store_true", help="replace the bank of that name (atomically)"
    )
    imp.add_argument(
        "--yes",
        action="store_true",
        help="replace even with a snapshot that brings back entities the bank purged",
    )
    imp.add_argument("--quiet", action="store_true")
    imp.set_defaults(handler=import_bank)

    known = sub.add_parser(
        "snapshots",
        help="the files a bank was exported to (a purge cannot reach them)",
    )
    known.add_argument("bank")
    known.add_argument("--json", action="store_true")
    known.set_defaults(handler=list_exports)

    diff = sub.add_parser(
        "diff", help="what changed between two snapshots, or a snapshot and a bank"
    )
    diff.add_argument("a", help="a .engram file or a bank name")
    diff.add_argument("b", help="a .engram file or a bank name")
    diff.add_argument("--limit", type=count_arg(), default=50, help="lines per section")
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(handler=diff_command)


def export_bank(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    path = Path(args.path) if args.path else Path(f"{default_filename(bank)}.engram")
    progress = None if args.quiet else progress_printer("export")
    manifest = bank.export_snapshot(path, progress=progress)
    # The links table holds each link once per direction; ingest counts pairs: so here.
    links = manifest.counts.get("links", 0) // 2
    counts = f"{manifest.counts.get('units', 0)} units, {manifest.counts.get('entities', 0)} entities, {links} links"
    print(f"exported bank {bank.name!r} to {path} ({counts})")
    return 0


def default_filename(bank) -> str:
    """The bank's folder name (a slug of the name it was made with, never changed)."""
    folder = getattr(bank, "folder", None)
    if folder is not None:
        return folder.name
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in bank.name) or "bank"


def list_exports(args, engine: Engine) -> int:
    exports = engine.open_bank(args.bank).exports()
    if args.json:
        print_json([{**vars(e), "exists": e.exists} for e in exports])
        return 0
    if not exports:
        print(f"bank {args.bank!r} has no recorded export")
    for e in exports:
        state = "" if e.exists else f"  (on {e.host})" if e.host else "  (file no longer there)"
        print(f"{e.exported_at}  {e.units:>7} units  {e.path}{state}")
    if exports:
        print(
            "These files are outside the bank: a purge does not reach them. Delete the ones"
            " made before a purge, or export again."
        )
    return 0


def import_bank(args, engine: Engine) -> int:
    from core import PurgedInSnapshotError

    progress = None if args.quiet else progress_printer("import")
    restore = args.yes

    def imported():
        return engine.import_snapshot(
            args.path, args.name, args.replace, progress=progress, restore_purged=restore
        )

    try:
        bank = imported()
    except PurgedInSnapshotError as error:
        # A purge is for good: bringing it back is asked, never done quietly.
        print(f"engram: {error}")
        answer = ask("Bring them back? [y/N] ", "replacing a bank with what it purged")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing imported")
            return 1
        restore = True
        bank = imported()
    print(f"imported {args.path} as bank {bank.name!r} ({bank.count(status=None)} units)")
    return 0


def _source(engine: Engine, ref: str, folder: Path):
    """A path to an existing file is a snapshot; anything else names a bank. A
    bank another process owns is exported into `folder` for the diff (unrecorded)."""
    if Path(ref).is_file():
        return Path(ref), None
    bank = engine.open_bank(ref)
    if hasattr(bank, "store"):
        return bank, None
    copy = folder / f"{len(list(folder.iterdir()))}.engram"
    bank.export_snapshot(copy, record_as="")
    return copy, f"bank {bank.name!r} (live)"


def diff_command(args, engine: Engine) -> int:
    import dataclasses
    import tempfile

    from core import diff_snapshots

    with tempfile.TemporaryDirectory(prefix="engram-diff-") as tmp:
        (a, label_a), (b, label_b) = (_source(engine, ref, Path(tmp)) for ref in (args.a, args.b))
        result = diff_snapshots(a, b)
    labels = {k: v for k, v in (("a", label_a), ("b", label_b)) if v}
    result = dataclasses.replace(result, **labels)
    if args.json:
        print_json(result)
    else:
        print(result.text(limit=args.limit))
    return 0
