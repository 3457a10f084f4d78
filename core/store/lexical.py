"""Tantivy: each unit's text for BM25, with English stemming.

User text never reaches Tantivy's query parser: it is run through the same
analyzer the index uses (`en_stem`: split on non-alphanumerics, drop tokens
over 40 bytes, lower-case, English stemmer) and every token becomes a plain
term query, so quotes, brackets, colons, `*`, `~`, `^`, AND/OR/NOT are words
or separators, never syntax.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

# Longer queries add nothing to BM25 but cost time: keep the first terms.
MAX_QUERY_TERMS = 64
# Mirrors Tantivy's built-in "en_stem" tokenizer, which the text field uses.
_ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
WRITER_HEAP = 50_000_000


@dataclass(frozen=True)
class TextHit:
    id: str
    score: float


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("network", stored=False, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    return builder.build()


def query_terms(text: str) -> list[str]:
    """The distinct index terms of `text`, in order of first appearance."""
    return list(dict.fromkeys(_ANALYZER.analyze(text)))[:MAX_QUERY_TERMS]


class LexicalIndex:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._schema = _schema()
        self._index = tantivy.Index(self._schema, path=str(folder), reuse=True)
        self._writer: tantivy.IndexWriter | None = None
        self._lock = threading.Lock()

    def _get_writer(self) -> tantivy.IndexWriter:
        # Only one Tantivy writer may exist; the bank lock makes it ours.
        if self._writer is None:
            self._writer = self._index.writer(WRITER_HEAP, 1)
        return self._writer

    def upsert(self, docs: Iterable[tuple[str, str, str]]) -> None:
        """docs: (id, network, text). Delete-then-add, committed together."""
        with self._lock:
            writer = self._get_writer()
            for unit_id, network, text in docs:
                writer.delete_documents_by_term("id", unit_id)
                writer.add_document(tantivy.Document(id=unit_id, network=network, text=text))
            writer.commit()
            self._index.reload()

    def add(self, docs: Iterable[tuple[str, str, str]]) -> None:
        """docs: (id, network, text) of units this index does not hold (a fresh
        index being filled): added without `upsert`'s delete first."""
        with self._lock:
            writer = self._get_writer()
            for unit_id, network, text in docs:
                writer.add_document(tantivy.Document(id=unit_id, network=network, text=text))
            writer.commit()
            self._index.reload()

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._lock:
            writer = self._get_writer()
            for unit_id in ids:
                writer.delete_documents_by_term("id", unit_id)
            writer.commit()
            self._index.reload()

    def count(self) -> int:
        return self._index.searcher().num_docs

    def ids(self) -> set[str]:
        searcher = self._index.searcher()
        if searcher.num_docs == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), limit=searcher.num_docs).hits
        return {searcher.doc(address)["id"][0] for _, address in hits}

    def search(
        self,
        text: str,
        k: int,
        networks: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[TextHit]:
        """BM25 hits for `text`; with `networks` or `ids`, only among those units
        (a filter inside the search, so the k best are the k best of those)."""
        terms = query_terms(text[:10_000])
        if not terms or k <= 0 or (ids is not None and not ids):
            return []
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", term))
                for term in terms
            ]
        )
        if networks is not None:
            network_query = tantivy.Query.boolean_query(
                [
                    (
                        tantivy.Occur.Should,
                        tantivy.Query.term_query(self._schema, "network", n),
                    )
                    for n in networks
                ]
            )
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, query), (tantivy.Occur.Must, network_query)]
            )
        if ids is not None:
            id_query = tantivy.Query.term_set_query(self._schema, "id", list(ids))
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, query), (tantivy.Occur.Must, id_query)]
            )
        searcher = self._index.searcher()
        hits = searcher.search(query, limit=k).hits
        return [TextHit(searcher.doc(address)["id"][0], float(score)) for score, address in hits]

    def compact(self) -> None:
        """Merge segments and drop files of deleted documents (purge relies on this)."""
        with self._lock:
            writer = self._get_writer()
            writer.commit()
            writer.wait_merging_threads()
            self._writer = None
            self._index.reload()
            writer = self._get_writer()
            writer.garbage_collect_files()

    def close(self) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.wait_merging_threads()
                self._writer = None
