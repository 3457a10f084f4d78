"""`engram recall BANK "query"`: what the bank recalls, and optionally how."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime

from core.cli.output import short_time
from core.engine import Engine
from core.recall.settings import CHANNELS, LEVELS
from core.types import InvalidInputError, Network


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recall",
        help="recall the facts most relevant to a query, within a token budget",
        description="Run the four recall channels (semantic, lexical, graph, temporal), "
        "fuse, rerank and pack the best facts into a token budget.",
    )
    p.add_argument("bank")
    p.add_argument("query")
    p.add_argument("--budget", type=int, default=1024, help="token budget (default 1024)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--trace", action="store_true", help="include the full trace")
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
    p.add_argument("--now", type=_datetime, help="reference time for 'last week' etc. (ISO)")
    p.add_argument("--since", type=_datetime, help="only facts occurring on or after (ISO)")
    p.add_argument("--until", type=_datetime, help="only facts occurring before (ISO)")
    p.add_argument(
        "--reranker", choices=["heuristic", "none"], help="default: the bank's (heuristic)"
    )
    p.add_argument(
        "--observations", type=int, default=0, metavar="N", help="token budget for entity profiles"
    )
    p.set_defaults(handler=run_recall)


def _datetime(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or date-time: {text!r}") from None


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
    if args.json:
        sys.stdout.write(result.to_json(indent=2, trace=args.trace) + "\n")
        return 0
    for item in result.items:
        sources = ",".join(item.source_ids)
        print(
            f"{item.rank:>3}. [{item.network}] {short_time(item.occurred_start)}  {item.text}"
            f"  ({item.tokens} tok, score {item.score:.3f}{', from ' + sources if sources else ''})"
        )
    for item in result.observations:
        print(f"  obs [{item.unit_id}] {item.text}  ({item.tokens} tok)")
    timings = result.trace["timings_ms"]
    print(
        f"-- {len(result.items)} facts, {result.tokens_used}/{result.budget} tokens, "
        f"reranker {result.reranker}, {timings.get('total', 0.0):.0f} ms"
    )
    for note in result.trace["notes"]:
        print(f"-- {note}")
    if args.trace:
        print(json.dumps(result.trace, indent=2, ensure_ascii=False))
    return 0
