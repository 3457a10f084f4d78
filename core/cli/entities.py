"""`engram entities BANK`: the bank's entities, most mentioned first; `--hints`:
the pairs that may be one entity, with why (nothing is merged)."""

from __future__ import annotations

import argparse

from core import Engine
from core.cli.output import count_arg, print_json, short_time


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "entities",
        help="list a bank's entities (name, type, aliases, mentions, first and last seen)",
    )
    p.add_argument("bank")
    p.add_argument("--search", metavar="TEXT", help="only names or aliases containing TEXT")
    p.add_argument("--type", help="only this entity type (person, place, …)")
    p.add_argument("--retracted", action="store_true", help="include retracted entities")
    p.add_argument("--limit", type=count_arg(), default=100, help="at most this many (0: all)")
    p.add_argument(
        "--hints",
        action="store_true",
        help="list pairs of entities that may be one (merge hints), not the entities",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=list_entities)


def list_hints(args, bank) -> int:
    hints = bank.merge_hints()
    total = len(hints)
    if args.limit > 0:
        hints = hints[: args.limit]
    if args.json:
        print_json(hints)
        return 0
    for h in hints:
        print(f"{h.score:.2f}  {h.source_name}  →  {h.target_name}    {h.reason}")
    if hints:
        first = hints[0]
        print(
            f"-- {total} merge hint{'' if total == 1 else 's'}; nothing was merged. To merge one:"
            f' engram merge "{args.bank}" "{first.source_name}" "{first.target_name}"'
        )
    else:
        print("-- no merge hints: no two entities look like one")
    return 0


def list_entities(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    if args.hints:
        return list_hints(args, bank)
    entities = bank.entities(include_retracted=args.retracted)
    if args.search:
        needle = args.search.casefold()
        entities = [
            e for e in entities if any(needle in n.casefold() for n in (e.name, *e.aliases))
        ]
    if args.type:
        entities = [e for e in entities if e.type == args.type]
    total = len(entities)
    if args.limit > 0:
        entities = entities[: args.limit]
    if args.json:
        print_json(entities)
        return 0
    for e in entities:
        aliases = f"  (also {', '.join(e.aliases)})" if e.aliases else ""
        retracted = "  [retracted]" if str(e.status) != "active" else ""
        seen = f"{short_time(e.first_seen)} – {short_time(e.last_seen)}"
        print(
            f"{e.id}  {e.name:<24} {e.type:<12} {e.mention_count:>4} mentions  {seen}"
            f"{aliases}{retracted}"
        )
    shown = len(entities)
    more = f" (first {shown} shown; --limit 0 for all)" if shown < total else ""
    print(f"-- {total} entit{'y' if total == 1 else 'ies'}{more}")
    return 0
