"""`engram activity BANK`: what was done to a bank, by whom, newest first;
`--show ID` prints one entry (a recall as `engram recall --trace` prints it),
`--replay ID` runs a recorded recall again against the bank as it is now."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

from core import ACTIVITY_KINDS, Engine
from core.cli.output import count_arg, print_json, short_time

RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)", re.IGNORECASE)
UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "activity",
        help="the bank's activity journal: every retain, recall, reflect and curation",
        description="Who did what to the bank and how it went, newest first: time, actor "
        "(an API token's name, cli, studio), transport, kind, duration and a summary. "
        "A recall keeps its whole trace: --show prints it, --replay runs it again now.",
    )
    p.add_argument("bank")
    p.add_argument("--actor", dest="who", metavar="NAME", help="only this actor's")
    p.add_argument("--kind", choices=ACTIVITY_KINDS, help="only this kind of operation")
    p.add_argument(
        "--since",
        type=since_time,
        metavar="WHEN",
        help="only since: ISO date/time, or ago: 30m, 2h, 7d",
    )
    p.add_argument("--limit", type=count_arg(minimum=1, maximum=1000), default=50)
    p.add_argument("--before", type=count_arg(minimum=1), help="ids below this (next page)")
    p.add_argument("--json", action="store_true")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--show", type=count_arg(minimum=1), metavar="ID", help="one entry")
    shown.add_argument(
        "--replay", type=count_arg(minimum=1), metavar="ID", help="run a recorded recall again"
    )
    p.set_defaults(handler=run_activity)


def since_time(text: str) -> datetime:
    """An ISO date/time (UTC when it names no offset), or how long ago: '2h', '7d'."""
    match = RELATIVE.fullmatch(text.strip())
    if match:
        seconds = float(match.group(1)) * UNITS[match.group(2).lower()]
        return datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=seconds)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO date/time or a time ago (30m, 2h, 7d): {text!r}"
        ) from None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def run_activity(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    if args.show is not None:
        return show(bank, args.show, args.json)
    if args.replay is not None:
        return replay(bank, args.replay, args.json)
    entries = bank.activity(
        actor=args.who, kind=args.kind, since=args.since, before=args.before, limit=args.limit
    )
    if args.json:
        print_json([e.to_dict() for e in entries])
        return 0
    if not entries:
        print("no activity recorded" + (" that matches" if args.who or args.kind else ""))
        return 0
    for e in entries:
        print(line(e))
    if len(entries) == args.limit:
        print(f"-- the latest {len(entries)}; more: --before {entries[-1].id}")
    return 0


def line(e) -> str:
    flag = "" if e.outcome == "ok" else f" [{e.outcome}]"
    return (
        f"#{e.id:<6} {short_time(e.started_at)}  {e.actor:<18} {e.transport:<9} {e.kind:<7}"
        f" {e.duration_ms:>7.0f} ms  {e.summary}{flag}"
    )


def show(bank, entry_id: int, as_json: bool) -> int:
    entry = bank.activity_entry(entry_id)
    if as_json:
        print_json(entry.to_dict())
        return 0
    print(line(entry))
    print(f"operation: {entry.operation} · started {entry.started_at.isoformat()} UTC")
    if entry.error:
        print(f"error: {entry.error}")
    if entry.arguments:
        print("arguments: " + ", ".join(f"{k}={v!r}" for k, v in entry.arguments.items()))
    if entry.change is not None:
        for side in ("added", "updated", "removed"):
            for kind, ids in getattr(entry.change, side).items():
                shown = ", ".join(sorted(ids)[:8]) + (" …" if len(ids) > 8 else "")
                print(f"{side} {len(ids)} {kind}(s): {shown}")
    if entry.operation == "recall" and entry.detail:
        from core.cli.recall import print_result, trace_summary

        result = bank.recorded_recall(entry_id)
        print("-- what the caller got:")
        print_result(result)
        print(trace_summary(result.trace))
    return 0


def replay(bank, entry_id: int, as_json: bool) -> int:
    from core.cli.recall import print_result

    replayed = bank.replay_recall(entry_id)
    if as_json:
        print_json(
            {
                "entry_id": replayed.entry_id,
                "summary": replayed.summary(),
                "gained": [i.unit_id for i in replayed.gained],
                "lost": [i.unit_id for i in replayed.lost],
                "moved": [
                    {"unit_id": m.unit_id, "was": m.was, "now": m.now} for m in replayed.moved
                ],
                "tokens_before": replayed.tokens_before,
                "tokens_after": replayed.tokens_after,
            }
        )
        return 0
    print(f"replay of #{entry_id} against the bank as it is now: {replayed.summary()}")
    for item in replayed.gained:
        print(f"  + {item.text}")
    for item in replayed.lost:
        print(f"  - {item.text}")
    for move in replayed.moved:
        print(f"  ~ {move.was} → {move.now}: {move.text}")
    print("-- now:")
    print_result(replayed.replayed)
    return 0
