"""Tags and metadata of memories, as Hindsight's API has them.

A retained item may carry `tags` (scopes: a user, a session, a project) and
`metadata` (any string map: its source, the agent that said it...). Both are
kept on the turn as it came in and on every unit drawn from it: a unit's tags
are the union of its source turns' tags, its metadata theirs merged (a later
turn's value wins). An observation, made from many facts, shows the union of
theirs, but a tag filter lets it through only when every fact it was made from
passes (core/store/tagged.py): a profile never carries what the caller's scope
could not see.

A `TagFilter` says which units a recall, reflect or listing may use, in
Hindsight's five modes:

- `any`: untagged units, and those with at least one of the tags;
- `all`: untagged units, and those with every one of the tags;
- `any_strict` / `all_strict`: the same without the untagged ones;
- `exact`: those whose tag set is exactly the tags (no tags: the untagged).

No tags means no filter, except under `exact`. `TagGroup`s combine filters
with and / or / not (Hindsight's `tag_groups`). Every filter renders to a
DuckDB condition with bound parameters only (`sql`).

The limits (how many tags, how long) are the ones every transport applies,
from the shared limits module (core/limits.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from core import limits
from core.text import has_surrogate
from core.types import InvalidInputError

TAG_MATCHES: tuple[str, ...] = ("any", "all", "any_strict", "all_strict", "exact")
GROUP_OPS: tuple[str, ...] = ("and", "or", "not")

# How many tags, how long: the shared table's (core/limits.py).
TAGS = limits.TAGS  # tags on one item; keys in one item's metadata
TAG_CHARS = limits.TAG_CHARS  # one tag; one metadata key
METADATA_VALUE_CHARS = limits.METADATA_VALUE_CHARS


@dataclass(frozen=True)
class TagFilter:
    """Units with these tags, matched as `match` says (see the module's docstring)."""

    tags: tuple[str, ...] = ()
    match: str = "any"

    def __post_init__(self) -> None:
        if self.match not in TAG_MATCHES:
            raise InvalidInputError(
                f"tags_match must be one of {', '.join(TAG_MATCHES)}, got {self.match!r}"
            )

    @property
    def active(self) -> bool:
        return bool(self.tags) or self.match == "exact"


@dataclass(frozen=True)
class TagGroup:
    """`and` / `or` of its parts, or `not` of its one part."""

    op: str
    parts: tuple[TagScope, ...]

    def __post_init__(self) -> None:
        if self.op not in GROUP_OPS:
            raise InvalidInputError(f"a tag group is one of {', '.join(GROUP_OPS)}")
        if self.op == "not" and len(self.parts) != 1:
            raise InvalidInputError("a 'not' tag group takes exactly one group")
        if not self.parts:
            raise InvalidInputError(f"an '{self.op}' tag group needs at least one group")

    @property
    def active(self) -> bool:
        return any(part.active for part in self.parts)


TagScope = Union[TagFilter, TagGroup]  # noqa: UP007 — a runtime alias used in isinstance


def scope_of(
    tags: Sequence[str] | None = None,
    match: str | None = None,
    groups: Sequence[TagScope] = (),
) -> TagScope | None:
    """One scope from Hindsight's `tags` + `tags_match` and `tag_groups` (AND-ed),
    or None when nothing is filtered."""
    parts: list[TagScope] = []
    leaf = TagFilter(tuple(tags or ()), match or "any")
    if leaf.active:
        parts.append(leaf)
    parts += [g for g in groups if g.active]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else TagGroup("and", tuple(parts))


def group_from_json(value: Any, where: str = "tag_groups") -> TagScope:
    """A Hindsight tag group: a leaf `{"tags": [...], "match": ...}` or
    `{"and": [...]}`, `{"or": [...]}`, `{"not": {...}}`."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where}: a tag group is an object")
    keys = set(value)
    for op in GROUP_OPS:
        if op in keys:
            if keys != {op}:
                raise InvalidInputError(f"{where}: '{op}' stands alone in its group")
            inner = value[op]
            if op == "not":
                return TagGroup("not", (group_from_json(inner, f"{where}.not"),))
            if not isinstance(inner, list):
                raise InvalidInputError(f"{where}.{op}: a list of groups")
            return TagGroup(
                op, tuple(group_from_json(g, f"{where}.{op}[{i}]") for i, g in enumerate(inner))
            )
    unknown = keys - {"tags", "match", "resolve"}
    if unknown:
        raise InvalidInputError(f"{where}: unknown keys {sorted(unknown)}")
    if value.get("resolve") not in (None, "exact"):
        raise InvalidInputError(
            f"{where}.resolve: Engram matches tags literally (no fuzzy resolution)"
        )
    return TagFilter(
        check_tags(value.get("tags"), f"{where}.tags"), str(value.get("match") or "any_strict")
    )


def describe(scope: TagScope | None) -> str:
    """The scope in a line, for traces and messages: `any_strict [a, b]`."""
    if scope is None:
        return "none"
    if isinstance(scope, TagGroup):
        if scope.op == "not":
            return f"not ({describe(scope.parts[0])})"
        return "(" + f" {scope.op} ".join(describe(p) for p in scope.parts) + ")"
    return f"{scope.match} [{', '.join(scope.tags)}]"


# -- SQL ---------------------------------------------------------------------------------


def sql(scope: TagScope, column: str = "u.tags") -> tuple[str, list[Any]]:
    """A DuckDB condition that holds for the units `scope` lets through."""
    tags = f"coalesce({column}, []::VARCHAR[])"
    if isinstance(scope, TagGroup):
        rendered = [sql(part, column) for part in scope.parts]
        params = [p for _, ps in rendered for p in ps]
        if scope.op == "not":
            return f"(NOT {rendered[0][0]})", params
        joiner = " AND " if scope.op == "and" else " OR "
        return "(" + joiner.join(s for s, _ in rendered) + ")", params
    wanted = list(dict.fromkeys(scope.tags))
    untagged = f"len({tags}) = 0"
    if scope.match == "exact":
        if not wanted:
            return untagged, []
        return f"list_sort(list_distinct({tags})) = ?", [sorted(wanted)]
    if not wanted:
        return "TRUE", []
    has = "list_has_any" if scope.match in ("any", "any_strict") else "list_has_all"
    condition = f"{has}({tags}, ?)"
    if scope.match in ("any", "all"):
        return f"({untagged} OR {condition})", [wanted]
    return condition, [wanted]


def matches(unit_tags: Iterable[str], scope: TagScope | None) -> bool:
    """The same rule in Python (for values already in memory)."""
    if scope is None:
        return True
    have = set(unit_tags)
    if isinstance(scope, TagGroup):
        results = [matches(have, part) for part in scope.parts]
        if scope.op == "not":
            return not results[0]
        return all(results) if scope.op == "and" else any(results)
    wanted = set(scope.tags)
    if scope.match == "exact":
        return have == wanted
    if not wanted:
        return True
    hit = bool(have & wanted) if scope.match in ("any", "any_strict") else wanted <= have
    return hit or (scope.match in ("any", "all") and not have)


# -- checking what comes in ------------------------------------------------------------------


def _storable(field: str, text: str, limit: int, what: str) -> str:
    if len(text) > limit:
        raise InvalidInputError(f"{field}: {what} is {len(text):,} characters, over {limit:,}")
    if has_surrogate(text) or "\x00" in text:
        raise InvalidInputError(f"{field}: {what} holds a lone surrogate or a NUL, not text")
    return text


def check_tags(value: Any, field: str = "tags") -> tuple[str, ...]:
    """Tags as stored: each a non-empty string within the limits, duplicates
    dropped, order kept. A JSON array sent as a string (some MCP bridges do)
    is read as the array; another plain string is one tag, as Hindsight reads it."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        value = parsed if isinstance(parsed, list) else [value]
    if not isinstance(value, list | tuple):
        raise InvalidInputError(f"{field}: a list of strings")
    if len(value) > TAGS:
        raise InvalidInputError(f"{field}: {len(value)} tags, over the limit of {TAGS}")
    out: list[str] = []
    for i, tag in enumerate(value):
        if not isinstance(tag, str):
            raise InvalidInputError(f"{field}[{i}]: a tag is a string")
        if not tag.strip():
            raise InvalidInputError(f"{field}[{i}]: a tag cannot be empty")
        _storable(f"{field}[{i}]", tag, TAG_CHARS, "the tag")
        if tag not in out:
            out.append(tag)
    return tuple(out)


def check_metadata(value: Any, field: str = "metadata") -> dict[str, str]:
    """A string map within the limits (keys non-empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{field}: an object of string values")
    if len(value) > TAGS:
        raise InvalidInputError(f"{field}: {len(value)} keys, over the limit of {TAGS}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip():
            raise InvalidInputError(f"{field}: keys are non-empty strings")
        _storable(field, key, TAG_CHARS, f"the key {key[:40]!r}")
        if not isinstance(item, str):
            raise InvalidInputError(f"{field}.{key}: values are strings")
        _storable(f"{field}.{key}", item, METADATA_VALUE_CHARS, "the value")
        out[key] = item
    return out


# -- what a unit inherits from its turns ----------------------------------------------------


def union(tag_lists: Iterable[Iterable[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for tags in tag_lists for t in tags))


def merged(maps: Iterable[Mapping[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in maps:
        out.update(m)
    return out


def metadata_json(metadata: Mapping[str, str] | None) -> str | None:
    """How metadata is stored (None when there is none)."""
    return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True) if metadata else None


def metadata_from(stored: Any) -> dict[str, str]:
    if not stored:
        return {}
    value = json.loads(stored) if isinstance(stored, str) else stored
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
