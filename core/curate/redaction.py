"""What a purge blanks out, and where: every name the entity ever had, matched
the way the BM25 index splits text, never an ordinary word.

Names: the entity's name and aliases, every surface its mentions recorded,
and every name its audit history gave it (a rename with `--no-alias` leaves
the old name nowhere else).

Matching follows Tantivy's tokenizer (runs of letters and digits; `_`, `-`,
`.` and the rest separate), so what is redacted is exactly what lexical recall
could find: "zorblax_q" is the tokens "zorblax" and "q". A name glued to more
letters at a case or digit boundary ("ZorblaxCorp", "Zorblax2") takes its
whole token with it, since the index holds "zorblaxcorp". A name recorded
with capitals whose lowercase form is an ordinary English word ("Grace",
"Bill") is not matched where the text has it in lowercase: "a grace period"
and "we said grace" are not the person.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb

from core.text import clean_text

REDACTED = "[redacted]"
_TOKEN = re.compile(r"[^\W_]+")
CONTEXT = 32
# Names this short would blank too much (initials, "I").
MIN_NAME = 2


@functools.cache
def common_words() -> frozenset[str]:
    """Lower-case English words: the embedding model's own word-piece vocabulary
    (whole words only), shipped with the model package, so nothing is fetched.

    The packaged model folder carries the vocabulary inside tokenizer.json (the
    WordPiece model's "vocab"); a folder with the older vocab.txt is read too."""
    try:
        from core.providers.embedder import default_model_path

        folder = default_model_path()
        tokenizer = folder / "tokenizer.json"
        if tokenizer.is_file():
            words = list(json.loads(tokenizer.read_text("utf-8"))["model"]["vocab"])
        else:
            words = (folder / "vocab.txt").read_text("utf-8").split("\n")
    except Exception:  # noqa: BLE001 - without the list, every case matches (safer)
        return frozenset()
    return frozenset(w for w in words if w.isalpha() and w.islower() and len(w) > 1)


@dataclass(frozen=True)
class Redaction:
    """One occurrence a purge blanks: where it is and how it reads around it."""

    table: str
    column: str
    row: str
    context: str  # the text around it, the name in «»

    def __str__(self) -> str:
        return f"{self.table}.{self.column} {self.row}: {self.context}"


class NameMatcher:
    """Finds an entity's names in text (see the module docstring)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(
            {n.strip() for n in names if isinstance(n, str) and len(n.strip()) >= MIN_NAME},
            key=lambda n: (-len(n), n),
        )
        self._tokens = [t for t in (_tokens_of(n) for n in self.names) if t]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    @property
    def first_tokens(self) -> list[str]:
        """Each name's first token, lower-cased: every occurrence contains one."""
        return sorted({tokens[0] for tokens, _, _ in self._tokens})

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every occurrence, whole index tokens, not overlapping."""
        if not self._tokens or not text:
            return []
        words = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
        found: list[tuple[int, int]] = []
        i = 0
        while i < len(words):
            hit = self._match_at(words, i)
            if hit:
                found.append((words[i][0], words[i + hit - 1][1]))
                i += hit
            else:
                i += 1
        return found

    def _match_at(self, words: list[tuple[int, int, str]], i: int) -> int:
        for name_tokens, name_has_caps, name_common in self._tokens:
            k = len(name_tokens)
            if i + k > len(words):
                continue
            texts = [w[2] for w in words[i : i + k]]
            if not _tokens_match(texts, name_tokens):
                continue
            if name_has_caps and name_common and all(t.islower() for t in texts):
                continue  # "a grace period", not Grace
            return k
        return 0

    def search(self, text: str) -> bool:
        return bool(self.spans(text))

    def sub(self, text: str) -> str:
        spans = self.spans(text)
        for start, end in reversed(spans):
            text = text[:start] + REDACTED + text[end:]
        return text

    def contexts(self, text: str) -> list[str]:
        out = []
        for start, end in self.spans(text):
            before = text[max(0, start - CONTEXT) : start]
            after = text[end : end + CONTEXT]
            lead = "…" if start > CONTEXT else ""
            tail = "…" if end + CONTEXT < len(text) else ""
            snippet = f"{lead}{before}«{text[start:end]}»{after}{tail}"
            out.append(" ".join(clean_text(snippet).split()))
        return out


def _tokens_of(name: str) -> tuple[tuple[str, ...], bool, bool] | None:
    tokens = tuple(_TOKEN.findall(name))
    if not tokens:
        return None
    has_caps = any(c.isupper() for c in name)
    common = all(t.lower() in common_words() for t in tokens)
    return tuple(t.lower() for t in tokens), has_caps, common


def _tokens_match(texts: Sequence[str], name: Sequence[str]) -> bool:
    """Text tokens equal the name's, the first and last allowed to be glued to
    more letters at a case or digit boundary ("MegaZorblax", "ZorblaxCorp")."""
    if len(name) == 1:
        return _glued(texts[0], name[0], left=True, right=True)
    middle_ok = all(t.lower() == n for t, n in zip(texts[1:-1], name[1:-1], strict=True))
    return (
        middle_ok
        and _glued(texts[0], name[0], left=True, right=False)
        and _glued(texts[-1], name[-1], left=False, right=True)
    )


def _glued(token: str, name: str, *, left: bool, right: bool) -> bool:
    lower = token.lower()
    if lower == name:
        return True
    if right and lower in (name + "s", name + "es"):
        return True  # "Zorblaxes": the index stems a plural to the name's own term
    if len(lower) != len(token) or token.isupper():
        return False  # case folding changed lengths, or ALLCAPS: no boundaries to see
    at = lower.find(name)
    while at >= 0:
        end = at + len(name)
        left_ok = at == 0 or (left and _boundary(token[at - 1], token[at]))
        right_ok = end == len(token) or (right and _boundary(token[end - 1], token[end]))
        if left_ok and right_ok:
            return True
        at = lower.find(name, at + 1)
    return False


def _boundary(before: str, after: str) -> bool:
    """A word boundary inside a token: aB, a1, 1a."""
    return (before.islower() and after.isupper()) or (before.isdigit() != after.isdigit())


# -- the names an entity has had ---------------------------------------------------


def names_ever(con: duckdb.DuckDBPyConnection, entity_id: str) -> list[str]:
    """Every name the entity has had: its name and aliases, its mentions' and
    resolution decisions' surfaces, and the names in its audit history."""
    names: set[str] = set()
    row = con.execute("SELECT name, aliases FROM entities WHERE id = ?", [entity_id]).fetchall()
    if row:
        names.add(row[0][0])
        names.update(row[0][1] or [])
    for sql in (
        "SELECT DISTINCT surface FROM mentions WHERE entity_id = ? AND surface IS NOT NULL",
        "SELECT DISTINCT surface FROM entity_decisions WHERE entity_id = ?",
    ):
        names.update(r[0] for r in con.execute(sql, [entity_id]).fetchall())
    for before, after in con.execute(
        "SELECT before_state::VARCHAR, after_state::VARCHAR FROM audit WHERE target = ?",
        [entity_id],
    ).fetchall():
        for state in (before, after):
            if state:
                names.update(_named(json.loads(state)))
    return sorted(n for n in names if isinstance(n, str) and n.strip())


def _named(value) -> Iterable[str]:
    """Strings under "name" or "aliases" keys anywhere in an audit state."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key == "name" and isinstance(item, str):
                    yield item
                elif key == "aliases" and isinstance(item, list):
                    yield from (a for a in item if isinstance(a, str))
                elif isinstance(item, dict | list):
                    stack.append(item)
        elif isinstance(node, list):
            stack.extend(i for i in node if isinstance(i, dict | list))


# -- where: a plan of every change, shown before and applied by a purge -------------

# Tables a purge does not redact column by column: units are deleted or planned
# on their own rows, entities lose names on their own, the audit log is
# scrubbed, the queue holds only ids.
NOT_REDACTED = frozenset({"entities", "audit", "index_queue"})
# Row labels people can look up; other tables are named by row number.
_ROW_LABEL = {"units": "id", "turns": "id", "documents": "id", "reflections": "id", "meta": "key"}


@dataclass
class RedactionPlan:
    matcher: NameMatcher
    # (table, rowid) -> {column: new value}
    updates: dict[tuple[str, int], dict[str, object]]
    redactions: list[Redaction]
    units: dict[str, str]  # unit id -> redacted text (units that stay)

    def count(self, table: str) -> int:
        return sum(1 for t, _ in self.updates if t == table)


# Rows the purge deletes (they go whole, so they are not redacted): $e is the
# entity, $u its units.
GOING = {
    "units": "id IN (SELECT unnest($u))",
    "mentions": "entity_id = $e OR unit_id IN (SELECT unnest($u))",
    "links": "entity_id = $e OR source IN (SELECT unnest($u)) OR target IN (SELECT unnest($u))",
    "opinion_events": "opinion_id IN (SELECT unnest($u))",
    "observations": "entity_id = $e OR unit_id IN (SELECT unnest($u))",
    "observation_sources": "observation_id IN (SELECT unnest($u))"
    " OR unit_id IN (SELECT unnest($u))",
    "entity_decisions": "entity_id = $e OR candidate_id = $e",
    "jobs": "target = $e",
}


def plan_redactions(
    con: duckdb.DuckDBPyConnection,
    matcher: NameMatcher,
    purged_units: Sequence[str],
    entity_id: str = "",
) -> RedactionPlan:
    """Every text that stays and names the entity, with its redacted value."""
    plan = RedactionPlan(matcher, {}, [], {})
    if not matcher:
        return plan
    for table, cols in _text_columns(con).items():
        label = _ROW_LABEL.get(table)
        needles = matcher.first_tokens
        likes = " OR ".join(
            f"CAST({c} AS VARCHAR) ILIKE $n{i} ESCAPE '\\'"
            for c, _ in cols
            for i in range(len(needles))
        )
        params: dict[str, object] = {f"n{i}": _like(n) for i, n in enumerate(needles)}
        going = GOING.get(table)
        if going:
            params |= {
                k: v for k, v in (("e", entity_id), ("u", list(purged_units))) if f"${k}" in going
            }
        select = ", ".join(c for c, _ in cols)
        rows = con.execute(
            f"SELECT rowid, {label or 'rowid'}, {select} FROM {table} WHERE ({likes})"
            + (f" AND NOT ({going})" if going else "")
            # In a stable order: a preview and the purge that follows list alike.
            + " ORDER BY 2, 1",
            params,
        ).fetchall()
        for rowid, ident, *values in rows:
            changed: dict[str, object] = {}
            for (column, kind), value in zip(cols, values, strict=True):
                new, contexts = _redacted(value, kind, matcher)
                if new != value:
                    changed[column] = new
                    row = f"{ident}" if label else f"row {ident}"
                    plan.redactions += [Redaction(table, column, row, c) for c in contexts]
            if changed:
                plan.updates[(table, rowid)] = changed
                if table == "units" and "text" in changed:
                    plan.units[ident] = changed["text"]
    return plan


def apply_plan(con: duckdb.DuckDBPyConnection, plan: RedactionPlan) -> None:
    """Write the plan's values (units' text excepted: the purge re-embeds those)."""
    for (table, rowid), changed in plan.updates.items():
        columns = {c: v for c, v in changed.items() if not (table == "units" and c == "text")}
        if columns:
            assignments = ", ".join(f"{c} = ?" for c in columns)
            con.execute(
                f"UPDATE {table} SET {assignments} WHERE rowid = ?", [*columns.values(), rowid]
            )


def _like(needle: str) -> str:
    from core.store.filters import like_pattern

    return like_pattern(needle)


def _text_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """Every VARCHAR, VARCHAR[] and JSON column of every table (tables added later
    included), but those of NOT_REDACTED tables."""
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in con.execute(
        "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c"
        " JOIN duckdb_tables() t ON t.database_name = c.database_name"
        " AND t.schema_name = c.schema_name AND t.table_name = c.table_name"
        " WHERE c.database_name = current_database() AND c.schema_name = 'main'"
        " AND c.data_type IN ('VARCHAR', 'VARCHAR[]', 'JSON')"
        " ORDER BY c.table_name, c.column_index"
    ).fetchall():
        if table not in NOT_REDACTED and not _is_reference(table, column):
            columns.setdefault(table, []).append((column, kind))
    return columns


def _is_reference(table: str, column: str) -> bool:
    """Ids and keys point at rows: redacting one would break what it points at (a
    hex id can hold a short name glued to digits)."""
    return (
        column in ("id", "key", "source", "target", "content_hash")
        or column.endswith(("_id", "_ids"))
        or (table == "units" and column != "text")
    )


def _redacted(value, kind: str, matcher: NameMatcher) -> tuple[object, list[str]]:
    """(the redacted value, the context of each occurrence)."""
    if value is None:
        return None, []
    if kind == "VARCHAR[]":
        contexts = [c for v in value if isinstance(v, str) for c in matcher.contexts(v)]
        return [matcher.sub(v) if isinstance(v, str) else v for v in value], contexts
    if kind == "JSON":
        try:
            parsed = json.loads(value)
        except ValueError:
            return matcher.sub(value), matcher.contexts(value)
        contexts: list[str] = []
        new = _redact_json(parsed, matcher, contexts)
        if not contexts:
            return value, []
        return json.dumps(new, ensure_ascii=False), contexts
    return matcher.sub(value), matcher.contexts(value)


def _redact_json(value, matcher: NameMatcher, contexts: list[str]):
    if isinstance(value, str):
        contexts += matcher.contexts(value)
        return matcher.sub(value)
    if isinstance(value, list):
        return [_redact_json(v, matcher, contexts) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            contexts += matcher.contexts(k)
            out[matcher.sub(k)] = _redact_json(v, matcher, contexts)
        return out
    return value
