"""Tantivy: each unit's text for BM25, with English stemming.

User text never reaches Tantivy's query parser as syntax: it is cut into
words here, lower-cased (so AND/OR/NOT lose their meaning) and every word is
a plain term, so quotes, brackets, colons, `*`, `~`, `^` are just separators.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

_WORD = re.compile(r"\w+", re.UNICODE)
# Longer queries add nothing to BM25 but cost time: keep the first words.
MAX_QUERY_WORDS = 64
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


def query_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)][:MAX_QUERY_WORDS]


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

    def search(self, text: str, k: int, networks: Sequence[str] | None = None) -> list[TextHit]:
        words = query_words(text)
        if not words or k <= 0:
            return []
        # The words contain only \w characters, so the parser sees plain terms.
        query = self._index.parse_query(" ".join(words), ["text"])
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
