"""`engram reflect`, `engram opinions`, `engram reflections`: answers under a
disposition, and the beliefs they form."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from core import Disposition, Engine, InvalidInputError
from core.cli import add_timeout_option
from core.cli.output import count_arg, iso_time, print_json, short_time

if TYPE_CHECKING:
    from core import Reflection


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reflect",
        help="answer a question from a bank under a disposition, forming opinions",
        description="Recall, answer under the disposition Θ (the bank's, with any trait "
        "overridden here) and form or update opinions. Without a reachable language model the "
        "answer is extractive and forms no opinions.",
    )
    p.add_argument("bank")
    p.add_argument("question")
    p.add_argument("--skepticism", type=_level, metavar="N", help="1..5")
    p.add_argument("--literalism", type=_level, metavar="N", help="1..5")
    p.add_argument("--empathy", type=_level, metavar="N", help="1..5")
    p.add_argument("--bias", type=_bias, metavar="X", help="bias strength β, 0..1")
    p.add_argument(
        "--compare",
        type=Path,
        metavar="PROFILES.json",
        help="answer under 2-4 dispositions (a JSON list of {skepticism, literalism, empathy, "
        "bias}) side by side; commits nothing unless --keep names one",
    )
    p.add_argument(
        "--keep",
        type=count_arg(minimum=1),
        metavar="N",
        help="with --compare: commit the N-th (1-based)",
    )
    p.add_argument("--dry-run", action="store_true", help="answer, but keep nothing")
    p.add_argument(
        "--budget", type=count_arg(minimum=1), default=4096, help="token budget for recall (4096)"
    )
    p.add_argument("--json", action="store_true", help="print the reflection(s) as JSON")
    p.add_argument("--prompt", action="store_true", help="also print the system prompt")
    add_timeout_option(p)
    p.set_defaults(handler=run_reflect)

    o = sub.add_parser("opinions", help="list opinions, or one opinion's history")
    o.add_argument("bank")
    o.add_argument("--entity", help="only opinions about this entity (name, alias or id)")
    o.add_argument("--history", metavar="ID", help="the trajectory of one opinion")
    o.add_argument("--since", type=iso_time, help="only opinions changed on or after (ISO)")
    o.add_argument("--until", type=iso_time, help="only opinions changed before (ISO)")
    o.add_argument("--json", action="store_true")
    o.set_defaults(handler=run_opinions)

    r = sub.add_parser("reflections", help="list the reflections a bank kept")
    r.add_argument("bank")
    r.add_argument("--limit", type=count_arg(), default=20)
    r.add_argument("--json", action="store_true")
    r.set_defaults(handler=run_reflections)


def _level(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 5:
        raise argparse.ArgumentTypeError(f"a trait level is an integer from 1 to 5, not {text!r}")
    return value


def _bias(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"bias is a number from 0 to 1, not {text!r}")
    return value


def _disposition(args, base: Disposition) -> Disposition:
    changes = {
        trait: getattr(args, trait)
        for trait in ("skepticism", "literalism", "empathy", "bias")
        if getattr(args, trait) is not None
    }
    return replace(base, **changes)


def load_profiles(path: Path) -> list[Disposition]:
    """Dispositions from a JSON file: a list of objects, or an object of named ones."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except OSError as error:
        raise InvalidInputError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise InvalidInputError(f"{path} is not valid JSON ({error})") from None
    entries = list(data.values()) if isinstance(data, dict) else data
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InvalidInputError(f"{path} must hold a list of dispositions (JSON objects)")
    try:
        return [Disposition.from_dict(e) for e in entries]
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"{path}: {error}") from None


def _theta(d: Disposition) -> str:
    return (
        f"skepticism {d.skepticism}, literalism {d.literalism}, empathy {d.empathy}, "
        f"bias {d.bias:.2f}"
    )


def _print_reflection(r: Reflection, show_prompt: bool) -> None:
    print(f"Θ: {_theta(r.disposition)}   mode: {r.mode}   evidence: {len(r.evidence)} facts")
    for note in r.notes:
        print(f"note: {note}")
    if show_prompt:
        print("\n--- system prompt ---\n" + r.system_prompt + "\n---------------------")
    if r.error:
        print(f"\nno answer: {r.error}")
        return
    print("\n" + r.answer)
    if r.opinion_error:
        print(f"\n{r.opinion_error}")
    for o in r.opinions:
        if o.action.value == "formed":
            print(f"\n+ new opinion {o.opinion_id} ({o.confidence:.2f}): {o.text}")
        else:
            before = f"{o.confidence_before:.2f}" if o.confidence_before is not None else "?"
            print(
                f"\n~ {o.relation} opinion {o.opinion_id} ({before} -> {o.confidence:.2f}): "
                f"{o.existing_text}"
            )


def run_reflect(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    if args.keep is not None and args.compare is None:
        raise InvalidInputError("--keep only goes with --compare")
    if args.compare is not None:
        dispositions = load_profiles(args.compare)
        comparison = bank.compare(args.question, dispositions, budget_tokens=args.budget)
        kept = None
        if args.keep is not None:
            if not 1 <= args.keep <= len(comparison):
                raise InvalidInputError(f"--keep must be between 1 and {len(comparison)}")
            if not args.dry_run:
                kept = comparison[args.keep - 1]
                bank.commit_reflection(kept)
        if args.json:
            print_json(
                {
                    "query": comparison.query,
                    "mixed": comparison.mixed,
                    "warning": comparison.warning or None,
                    "reflections": [r.to_dict() for r in comparison.reflections],
                    "kept": kept.id if kept else None,
                }
            )
            return 0
        if comparison.warning:
            print(f"WARNING: {comparison.warning}\n")
        for n, r in enumerate(comparison.reflections, start=1):
            print(f"=== {n} ===")
            _print_reflection(r, args.prompt)
            print()
        print(f"kept reflection {args.keep} ({kept.id})" if kept else "nothing committed")
        return 0
    disposition = _disposition(args, bank.profile().disposition)
    reflection = bank.reflect(
        args.question, disposition, budget_tokens=args.budget, commit=not args.dry_run
    )
    if args.json:
        print_json(reflection.to_dict())
        return 0
    _print_reflection(reflection, args.prompt)
    print("\n(dry run: nothing kept)" if args.dry_run else f"\nkept as reflection {reflection.id}")
    return 0


def run_opinions(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    if args.history:
        t = bank.opinion_history(args.history)
        if args.json:
            print_json(
                {
                    "opinion": t.opinion,
                    "texts": t.texts,
                    "steps": [
                        {
                            "event": s.event,
                            "evidence": s.evidence.text if s.evidence else None,
                            "reflection_id": s.reflection_id,
                        }
                        for s in t.steps
                    ],
                }
            )
            return 0
        confidence = t.opinion.confidence
        print(f"{t.opinion.id}  {t.opinion.text}  (now {_conf(confidence)})")
        for s in t.steps:
            e = s.event
            move = f"{_conf(e.confidence_before)} -> {_conf(e.confidence_after)}"
            print(f"  {short_time(e.happened_at)}  {e.relation:<10} {move}  {e.reason or ''}")
            if s.evidence is not None:
                print(f"      evidence [{s.evidence.id}] {s.evidence.text}")
            if s.reflection_id:
                print(f"      from reflection {s.reflection_id}")
            if e.old_text and e.new_text and e.old_text != e.new_text:
                print(f"      text was: {e.old_text}")
        return 0
    if args.since or args.until:
        changes = bank.opinions_changed(args.since, args.until)
        if args.json:
            print_json([{"opinion": c.opinion, "events": c.events} for c in changes])
            return 0
        for c in changes:
            print(
                f"{c.opinion.id}  {_conf(c.confidence_before)} -> {_conf(c.confidence_after)}"
                f"  ({len(c.events)} events)  {c.opinion.text}"
            )
        if not changes:
            print("no opinion changed in that range")
        return 0
    units = bank.opinions(args.entity)
    if args.json:
        print_json(units)
        return 0
    for u in units:
        print(f"{u.id}  {_conf(u.confidence)}  {u.text}")
    if not units:
        print("no opinions" + (f" about {args.entity!r}" if args.entity else ""))
    return 0


def run_reflections(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    reflections = bank.reflections(limit=args.limit)
    if args.json:
        print_json([r.to_dict() for r in reflections])
        return 0
    for r in reflections:
        touched = f", {len(r.opinions)} opinions" if r.opinions else ""
        print(f"{r.id}  {short_time(r.created_at)}  [{r.mode}{touched}]  {r.query}")
    if not reflections:
        print("no reflections kept yet")
    return 0


def _conf(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"
