"""Banks and their memories: banks, bank create|delete|rename, memories list, verify, repair."""

from __future__ import annotations

import argparse

from core import UNIT_ORDERS as ORDER_COLUMNS
from core import Engine, Kind, Network, UnitStatus
from core.cli.output import (
    ask,
    count_arg,
    iso_time,
    iso_time_or_none,
    print_json,
    progress_printer,
    short_time,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("banks", help="list banks")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=list_banks)

    bank = sub.add_parser("bank", help="create, delete or rename a bank")
    bank_sub = bank.add_subparsers(dest="bank_command", metavar="ACTION", required=True)
    create = bank_sub.add_parser("create", help="create a bank")
    create.add_argument("name")
    create.add_argument("--background", default="")
    create.add_argument("--agent", default="", help="which speaker is the agent ('I')")
    create.set_defaults(handler=create_bank)
    delete = bank_sub.add_parser("delete", help="delete a bank and everything in it")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask to confirm")
    delete.set_defaults(handler=delete_bank)
    rename = bank_sub.add_parser("rename", help="rename a bank")
    rename.add_argument("name")
    rename.add_argument("new_name")
    rename.set_defaults(handler=rename_bank)

    memories = sub.add_parser("memories", help="browse memory units")
    mem_sub = memories.add_subparsers(dest="memories_command", metavar="ACTION", required=True)
    lst = mem_sub.add_parser("list", help="list units with filters")
    lst.add_argument("bank")
    lst.add_argument("--network", choices=[n.value for n in Network], action="append")
    lst.add_argument("--entity")
    lst.add_argument("--text", help="case-insensitive substring")
    lst.add_argument("--since", type=iso_time, help="occurred on or after (YYYY-MM-DD)")
    lst.add_argument("--until", type=iso_time, help="occurred before (YYYY-MM-DD)")
    lst.add_argument(
        "--status", default="active", choices=["active", "retracted", "hidden", "stale", "any"]
    )
    lst.add_argument("--order", default="occurred_start", choices=sorted(ORDER_COLUMNS))
    lst.add_argument("--desc", action="store_true")
    lst.add_argument("--limit", type=count_arg(), default=50)
    lst.add_argument("--offset", type=count_arg(), default=0)
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=list_memories)

    from core.cli import add_actor_option
    from core.cli.curate import _confidence, _then_jobs, add_memory

    add = mem_sub.add_parser("add", help="add a memory by hand (audited, undoable)")
    add.add_argument("bank")
    add.add_argument("text")
    add.add_argument("--network", default="world", choices=["world", "experience", "opinion"])
    add.add_argument("--entity", action="append", dest="entities", help="id or name; repeat")
    add.add_argument("--start", type=iso_time_or_none, default=None, help="occurrence start (ISO)")
    add.add_argument("--end", type=iso_time_or_none, default=None, help="occurrence end (ISO)")
    add.add_argument("--confidence", type=_confidence, default=None, help="opinions: 0..1")
    add_actor_option(add)
    add.add_argument("--no-jobs", action="store_true", help="leave the rebuilds it queues")
    add.set_defaults(handler=_then_jobs(add_memory))

    verify = sub.add_parser("verify", help="check that DuckDB, LanceDB and Tantivy agree")
    verify.add_argument("bank")
    verify.add_argument("--json", action="store_true")
    verify.set_defaults(handler=verify_bank)
    repair = sub.add_parser("repair", help="re-derive the indexes where they disagree")
    repair.add_argument("bank")
    repair.add_argument("--rebuild", action="store_true", help="rebuild both indexes entirely")
    repair.add_argument(
        "--re-embed",
        action="store_true",
        help="a bank recorded with another embedding model: embed every unit again with this one",
    )
    repair.set_defaults(handler=repair_bank)


def list_banks(args, engine: Engine) -> int:
    banks = engine.banks()
    if args.json:
        print_json(
            [{"name": b.name, "folder": str(b.folder), "created_at": b.created_at} for b in banks]
        )
    elif not banks:
        print(f"no banks in {engine.banks_dir} (create one: engram bank create NAME)")
    else:
        for b in banks:
            print(b.name)
    return 0


def create_bank(args, engine: Engine) -> int:
    bank = engine.create_bank(args.name, background=args.background, agent_name=args.agent)
    print(f"created bank {bank.name!r} in {bank.folder}")
    return 0


def delete_bank(args, engine: Engine) -> int:
    if not args.yes:
        typed = ask(
            f"Type the bank's name to delete it for good ({args.name}): ",
            f"not deleting bank {args.name!r}",
        )
        if typed != args.name:
            print("names differ: nothing deleted")
            return 1
    engine.delete_bank(args.name)
    print(f"deleted bank {args.name!r}")
    return 0


def rename_bank(args, engine: Engine) -> int:
    engine.rename_bank(args.name, args.new_name)
    print(f"renamed {args.name!r} to {args.new_name!r}")
    return 0


def list_memories(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    filters = {
        "entity": args.entity,
        "text": args.text,
        "start": args.since,
        "end": args.until,
        "status": None if args.status == "any" else args.status,
    }
    units = bank.units(
        args.network,
        order=args.order,
        descending=args.desc,
        offset=args.offset,
        limit=args.limit,
        **filters,
    )
    if args.json:
        print_json(units)
        return 0
    total = bank.count(args.network, **filters)
    for u in units:
        conf = f" ({u.confidence:.2f})" if u.confidence is not None else ""
        # With --status any, a hidden or retracted unit must not read as a live one.
        status = "" if u.status is UnitStatus.ACTIVE else f"[{u.status.value}] "
        print(
            f"{u.id}  {u.network.value:<11} {short_time(u.occurred_start)}  {status}{u.text}{conf}"
        )
    print(f"-- {len(units)} of {total} shown (offset {args.offset})")
    return 0


def verify_bank(args, engine: Engine) -> int:
    report = engine.open_bank(args.bank).verify()
    if args.json:
        print_json({**vars(report), "ok": report.ok})
    else:
        _print_report(report)
    return 0 if report.ok else 1


def repair_bank(args, engine: Engine) -> int:
    if args.re_embed:
        change = engine.reembed_bank(args.bank, progress_printer("re-embedding"))
        if change.empty:
            print(f"{args.bank!r} already uses {engine.embedder.name}: nothing to re-embed")
        else:
            print(f"re-embedded {len(change.ids(Kind.UNIT))} units with {engine.embedder.name}")
    report = engine.open_bank(args.bank).repair(rebuild=args.rebuild)
    _print_report(report)
    return 0 if report.ok else 1


def _print_report(report) -> None:
    print(
        f"units {report.units}, vectors {report.vectors}, bm25 {report.lexical}, queued {report.pending}"
    )
    for label, ids in (
        ("missing from vectors", report.missing_vectors),
        ("missing from bm25", report.missing_lexical),
        ("stale in vectors", report.extra_vectors),
        ("stale in bm25", report.extra_lexical),
    ):
        if ids:
            print(f"{label}: {len(ids)} ({', '.join(ids[:5])}{' …' if len(ids) > 5 else ''})")
    for table, count in report.dangling.items():
        if count:
            print(f"dangling rows in {table}: {count}")
    print("OK: the three stores agree" if report.ok else "NOT OK: run `engram repair BANK`")
