"""Curation: edit, delete, hide, unhide, rename-entity, merge, split, retract,
restore, purge, undo, redo, audit (and `memories add`).

What a curation action made stale is hidden at once; the observation rebuilds
it queued run right after it (`--no-jobs` leaves them for `engram jobs run`)."""

from __future__ import annotations

import argparse

from core import UNSET, Change, Engine, Kind, Network
from core.cli import add_actor_option
from core.cli.output import ask, count_arg, iso_time_or_none, print_json, short_time


def register(sub: argparse._SubParsersAction) -> None:
    def command(name: str, help: str, handler, *, entity: bool = False):
        p = sub.add_parser(name, help=help)
        p.add_argument("bank")
        if entity:
            p.add_argument("entity", help="entity id, name or alias")
        add_actor_option(p)
        p.add_argument("--no-jobs", action="store_true", help="leave the rebuilds it queues")
        p.set_defaults(handler=_then_jobs(handler))
        return p

    edit = command("edit", "edit a memory unit (re-embedded, re-indexed, re-linked)", edit_unit)
    edit.add_argument("unit")
    edit.add_argument("--text")
    edit.add_argument("--network", choices=[n.value for n in Network])
    # UNSET when not given, so "none" (clear the value) and "not given" differ.
    edit.add_argument(
        "--start",
        type=iso_time_or_none,
        default=UNSET,
        help="occurrence start, ISO date/time or 'none'",
    )
    edit.add_argument(
        "--end",
        type=iso_time_or_none,
        default=UNSET,
        help="occurrence end, ISO date/time or 'none'",
    )
    edit.add_argument("--confidence", type=_confidence, default=UNSET, help="0..1, or 'none'")
    edit.add_argument(
        "--entity",
        action="append",
        dest="entities",
        help="the unit's entities (id or name; repeat; replaces the current set)",
    )
    edit.add_argument("--no-entities", action="store_true", help="the unit mentions no entity")

    delete = command("delete", "delete memory units with their links and mentions", delete_units)
    delete.add_argument("units", nargs="+")

    hide = command("hide", "hide memory units without deleting them (undoable)", hide_units)
    hide.add_argument("units", nargs="+")
    unhide = command("unhide", "bring hidden memory units back", unhide_units)
    unhide.add_argument("units", nargs="+")

    rename = command("rename-entity", "rename an entity", rename_entity, entity=True)
    rename.add_argument("name")
    rename.add_argument("--no-alias", action="store_true", help="do not keep the old name as alias")

    merge = command("merge", "merge entity SOURCE into TARGET", merge_entities)
    merge.add_argument("source", help="entity merged away (id, name or alias)")
    merge.add_argument("target", help="entity that stays")

    split = command("split", "move chosen mentions to a new entity", split_entity, entity=True)
    split.add_argument("name", help="the new entity's name")
    split.add_argument("--unit", action="append", dest="units", required=True)
    split.add_argument("--type", help="the new entity's type (default: the original's)")

    retract_cmd = command(
        "retract", "hide an entity and what derives from it", retract, entity=True
    )
    retract_cmd.add_argument("--preview", action="store_true", help="only show what it touches")
    retract_cmd.add_argument("--json", action="store_true")

    command("restore", "bring a retracted entity back", restore, entity=True)

    forget = command(
        "purge",
        "remove an entity and what derives from it FOR GOOD (cannot be undone)",
        purge,
        entity=True,
    )
    forget.add_argument("--yes", action="store_true", help="do not ask to confirm")
    forget.add_argument(
        "--show",
        type=count_arg(),
        default=50,
        metavar="N",
        help="list at most N redactions in context (default 50)",
    )

    command("undo", "take back the latest curation action", undo)
    command("redo", "apply again what the latest undo took back", redo)

    audit = sub.add_parser("audit", help="the curation log: who did what, when")
    audit.add_argument("bank")
    audit.add_argument("--limit", type=count_arg(), default=50)
    audit.add_argument("--action")
    audit.add_argument("--target")
    audit.add_argument("--json", action="store_true")
    audit.set_defaults(handler=show_audit)


def _then_jobs(handler):
    """Run the handler, then the jobs it queued (or say how many are left)."""

    def run(args, engine: Engine) -> int:
        from core.cli.jobs import pending_hint, run_pending

        code = handler(args, engine)
        if getattr(args, "preview", False) or getattr(args, "json", False):
            return code
        bank = engine.open_bank(args.bank)
        pending = bank.pending_jobs()
        if args.no_jobs:
            if pending:
                print(pending_hint(bank, pending))
        elif pending and run_pending(bank, engine):
            return code or 1
        return code

    return run


def _confidence(text: str):
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _report(change: Change, what: str) -> int:
    if change.empty:
        print(f"{what}: nothing changed")
        return 0
    parts = []
    for label, groups in (
        ("added", change.added),
        ("updated", change.updated),
        ("removed", change.removed),
    ):
        for kind in (Kind.UNIT, Kind.ENTITY, Kind.LINK, Kind.JOB):
            if groups.get(kind):
                parts.append(f"{len(groups[kind])} {kind.value}(s) {label}")
    print(f"{what}: " + ", ".join(parts))
    return 0


def edit_unit(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entities = None
    if args.no_entities:
        entities = []
    elif args.entities:
        entities = [bank.resolve_entity(e) for e in args.entities]
    change = bank.edit_unit(
        args.unit,
        text=args.text,
        network=args.network,
        occurred_start=args.start,
        occurred_end=args.end,
        confidence=args.confidence,
        entity_ids=entities,
    )
    return _report(change, f"edited {args.unit}")


def delete_units(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    return _report(bank.delete_units(args.units), "deleted")


def hide_units(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    return _report(bank.hide_units(args.units), "hidden (unhide or undo)")


def unhide_units(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    return _report(bank.unhide_units(args.units), "unhidden")


def add_memory(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entities = [bank.resolve_entity(e) for e in args.entities or ()]
    change = bank.add_memory(
        args.text,
        network=args.network,
        occurred_start=args.start,
        occurred_end=args.end,
        confidence=args.confidence,
        entity_ids=entities,
    )
    [unit_id] = change.added[Kind.UNIT]
    print(f"added {unit_id} (undo takes it back)")
    return 0


def rename_entity(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entity_id = bank.resolve_entity(args.entity)
    change = bank.rename_entity(entity_id, args.name, keep_alias=not args.no_alias)
    return _report(change, f"renamed {entity_id} to {args.name!r}")


def merge_entities(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    source, target = bank.resolve_entity(args.source), bank.resolve_entity(args.target)
    return _report(bank.merge_entities(source, target), f"merged {source} into {target}")


def split_entity(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entity_id = bank.resolve_entity(args.entity)
    change = bank.split_entity(entity_id, args.units, args.name, type=args.type)
    new = ", ".join(change.added.get(Kind.ENTITY, ()))
    return _report(change, f"split {len(args.units)} mention(s) into new entity {new}")


def _print_preview(preview) -> None:
    print(f"entity {preview.name!r} ({preview.entity_id}, {preview.status}) touches:")
    print(
        f"  {preview.units} fact(s), {preview.opinions} opinion(s) with {preview.opinion_events} event(s),"
    )
    print(
        f"  {preview.observations} observation(s), {preview.links} link(s), {preview.source_turns} source turn(s)"
    )


def retract(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entity_id = bank.resolve_entity(args.entity)
    preview = bank.retract_preview(entity_id)
    if args.json:
        print_json({**vars(preview), "total_units": preview.total_units})
    else:
        _print_preview(preview)
    if args.preview:
        return 0
    return _report(
        bank.retract_entity(entity_id),
        "retracted (undo or restore brings it back)",
    )


def restore(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entity_id = bank.resolve_entity(args.entity)
    return _report(bank.restore_entity(entity_id), "restored")


def purge(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entity_id = bank.resolve_entity(args.entity)
    preview = bank.retract_preview(entity_id)
    _print_preview(preview)
    print(
        f"  and its names are redacted in {preview.turns_to_redact} stored turn(s)"
        f" and {preview.units_to_redact} other unit(s):"
    )
    for line in redaction_lines(preview.redactions, args.show):
        print(f"    {line}")
    print("A purge removes all of this FOR GOOD. It cannot be undone.")
    print(snapshot_warning(bank.exports()))
    if not args.yes:
        typed = ask(
            f"Type the entity's name to purge it ({preview.name}): ",
            f"not purging {preview.name!r}",
        )
        if typed != preview.name:
            print("names differ: nothing purged")
            return 1
    return _report(bank.purge_entity(entity_id, confirm=True), "purged")


def redaction_lines(redactions, limit: int) -> list[str]:
    """Each redaction in its context, at most `limit`, then how many more."""
    lines = [str(r) for r in redactions[:limit]]
    if len(redactions) > limit:
        lines.append(f"… and {len(redactions) - limit} more (--show N lists more)")
    return lines or ["(no text outside the removed memories names it)"]


def snapshot_warning(exports) -> str:
    """What a purge cannot reach: snapshot files exported before it."""
    text = (
        "Exported snapshots (.engram files) are outside the bank: a purge does not touch"
        " them, and importing one made before the purge brings everything back."
    )
    present = [e for e in exports if e.exists]
    if not present:
        return text + " This bank has no recorded export that still exists."
    listed = "\n".join(f"    {e.path}  (exported {e.exported_at})" for e in present)
    return (
        f"{text}\nThis bank was exported to these files; delete them, or export again"
        f" after the purge:\n{listed}"
    )


def undo(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    return _report(bank.undo(), "undone")


def redo(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    return _report(bank.redo(), "redone")


def show_audit(args, engine: Engine) -> int:
    bank = engine.open_bank(args.bank)
    entries = bank.audit(limit=args.limit, action=args.action, target=args.target)
    if args.json:
        print_json(entries)
        return 0
    if not entries:
        print("no curation actions recorded")
    for e in entries:
        flag = " (undone)" if e.undone else ""
        print(f"#{e.seq:<5} {short_time(e.recorded_at)}  {e.actor:<6} {e.summary}{flag}")
    return 0
