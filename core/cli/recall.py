"""`engram recall BANK "query"`: what the bank recalls, and optionally how."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core import CHANNELS, LEVELS, STOP_REASONS, Engine, InvalidInputError, Network
from core.cli.output import count_arg, iso_time, short_time

if TYPE_CHECKING:
    from core import RecallResult, RecallTrace


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recall",
        help="recall the facts most relevant to a query, within a token budget",
        description="Run the four recall channels (semantic, lexical, graph, temporal), "
        "fuse, rerank and pack the best facts into a token budget.",
    )
    p.add_argument("bank")
    p.add_argument("query")
    p.add_argument(
        "--budget", type=count_arg(minimum=1), default=1024, help="token budget (default 1024)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--trace",
        nargs="?",
        const="",
        metavar="FILE",
        help="--trace FILE: write the full trace (JSON) to FILE; --trace alone: print a "
        "short summary of it (with --json: include it in the JSON)",
    )
    p.add_argument(
        "--network",
        choices=[n.value for n in Network],
        action="append",
        help="only this network (repeatable)",
    )
    p.add_argument("--level", choices=list(LEVELS), default="mid", help="candidates per channel")
    p.add_argument(
        "--channel", choices=list(CHANNELS), action="append", help="only this channel (repeatable)"
    )
    p.add_argument("--now", type=iso_time, help="reference time for 'last week' etc. (ISO)")
    p.add_argument("--since", type=iso_time, help="only facts occurring on or after (ISO)")
    p.add_argument("--until", type=iso_time, help="only facts occurring before (ISO)")
    p.add_argument(
        "--reranker", choices=["heuristic", "none"], help="default: the bank's (heuristic)"
    )
    p.add_argument(
        "--observations",
        type=count_arg(),
        default=0,
        metavar="N",
        help="token budget for entity profiles",
    )
    p.set_defaults(handler=run_recall)


def run_recall(args, engine: Engine) -> int:
    if args.budget < 0:
        raise InvalidInputError("--budget must be >= 0")
    engine.preload_embedder()
    bank = engine.open_bank(args.bank)
    result = bank.recall(
        args.query,
        budget_tokens=args.budget,
        networks=args.network,
        now=args.now,
        level=args.level,
        channels=args.channel,
        start=args.since,
        end=args.until,
        reranker=args.reranker,
        observation_budget=args.observations,
    )
    trace_file = Path(args.trace) if args.trace else None
    if trace_file is not None:
        try:
            trace_file.write_text(
                json.dumps(result.trace.to_dict(), indent=2, ensure_ascii=False), "utf-8"
            )
        except OSError as error:
            raise InvalidInputError(
                f"cannot write the trace to {trace_file}: {error.strerror or error}"
            ) from None
    if args.json:
        inline = args.trace is not None and trace_file is None
        sys.stdout.write(result.to_json(indent=2, trace=inline) + "\n")
        return 0
    print_result(result)
    if trace_file is not None:
        print(f"-- trace written to {trace_file}")
    elif args.trace is not None:
        print(trace_summary(result.trace))
    return 0


def print_result(result: RecallResult) -> None:
    """The packed facts, one a line, and a line on how many and how fast (what
    `engram recall` prints; `engram activity --show` prints a recorded one so)."""
    for item in result.items:
        sources = ",".join(item.source_ids)
        print(
            f"{item.rank:>3}. [{item.network}] {short_time(item.occurred_start)}  {item.text}"
            f"  ({item.tokens} tok, score {item.score:.3f}{', from ' + sources if sources else ''})"
        )
    for item in result.observations:
        print(f"  obs [{item.unit_id}] {item.text}  ({item.tokens} tok)")
    timings = result.trace.timings_ms
    print(
        f"-- {len(result.items)} facts, {result.tokens_used}/{result.budget} tokens, "
        f"reranker {result.reranker}, {timings.get('total', 0.0):.0f} ms"
    )
    for note in result.trace.notes:
        print(f"-- {note}")


def window_text(trace: RecallTrace) -> str:
    if trace.interval is None:
        return "none: the query names no time"
    return trace.interval.describe()


def trace_summary(trace: RecallTrace) -> str:
    """A few lines about how recall chose: what each channel found, what fusion,
    rerank and packing did, and where the time went (the whole trace: --trace FILE)."""
    lines = ["-- trace:"]
    for name, channel in trace.channels.items():
        if not channel.ran:
            lines.append(f"   {name:<9} not run" + (f" ({channel.note})" if channel.note else ""))
            continue
        note = f"; {channel.note}" if channel.note else ""
        lines.append(f"   {name:<9} {len(channel.ids):>4} candidates, {channel.ms:.0f} ms{note}")
    activation = trace.activation
    if activation:
        # `steps` records each node lit (with the wave that lit it); `waves` each wave.
        waves = len(activation.get("waves", []))
        code = str(activation.get("stopped") or "")
        stopped = f"; stopped: {STOP_REASONS.get(code, code)}" if code else ""
        lines.append(
            f"   graph    {len(activation.get('seeds', []))} seeds, "
            f"{waves} wave{'' if waves == 1 else 's'} of spreading, "
            f"{activation.get('lit', 0)} lit{stopped}"
        )
    lines.append(
        f"   fused    {len(trace.fused)} candidates; reranked by "
        f"{trace.rerank.name or '?'}; packed {len(trace.packing.packed)}, "
        f"skipped {len(trace.packing.skipped)} for the budget"
    )
    if trace.reference_time is not None:
        lines.append(
            f"   time     reference {trace.reference_time.isoformat()} ({trace.reference_source})"
        )
    lines.append(f"   window   {window_text(trace)}")
    timings = trace.timings_ms
    slow = sorted(
        ((k, v) for k, v in timings.items() if not k.startswith("total")), key=lambda kv: -kv[1]
    )[:4]
    if slow:
        lines.append("   slowest  " + ", ".join(f"{k} {v:.0f} ms" for k, v in slow))
    return "\n".join(lines)
