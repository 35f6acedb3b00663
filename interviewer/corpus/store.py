"""The vector store: corpus chunks in chromadb, searched by embedding.

Chunks come from three places: each bank question (its text and short
answer), each reference answer, and the source passages (one per parsed
question block, plus user documents split into ~800-character pieces). Every
chunk carries source, question id, section and character offsets so a hit can
be cited. Chunk ids are content hashes, so indexing is idempotent and
incremental: an unchanged corpus costs one `get` and no embedding work.

This module never lets chromadb embed anything itself (its default embedder
downloads a model); we always pass our own vectors.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from interviewer.corpus.bank import Bank, source_files
from interviewer.errors import BackendUnavailable, CorpusNotIndexed, StorageError
from interviewer.models.embeddings import embedder_for
from interviewer.settings import Settings

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

COLLECTION = "interviewer-corpus"
USER_DOCS = "user_docs"  # folder under home holding ingested documents' text


@dataclass(frozen=True)
class Chunk:
    text: str
    source: str
    kind: str  # "question" | "reference" | "passage"
    question_id: str | None = None
    section: str = ""
    start: int = 0
    end: int = 0

    @property
    def id(self) -> str:
        key = f"{self.kind}|{self.source}|{self.question_id}|{self.start}|{self.text}"
        return hashlib.sha1(key.encode()).hexdigest()[:20]

    def metadata(self) -> dict[str, str | int]:
        return {
            "source": self.source,
            "kind": self.kind,
            "question_id": self.question_id or "",
            "section": self.section,
            "start": self.start,
            "end": self.end,
        }


# The bundled documents' titles, for citations; a user document is cited by its file stem.
TITLES = {
    "000": "Training — Interview Topics",
    "002": "Training Behaviors — Interview Grill",
    "003": "Training Dynamics — 43 Questions Answered",
    "004": "Deep Learning Training Interview Questions",
}


@dataclass(frozen=True)
class Hit:
    question_id: str | None
    source: str
    kind: str
    section: str
    start: int
    end: int
    text: str
    score: float  # cosine similarity, 1.0 = identical

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def citation(self) -> str:
        """The source as a person cites it: document title, section and item (offsets stay in
        `to_json`).

        >>> Hit("002-10", "002", "question", "Learning rate", 4970, 5472, "", 1.0).citation()
        'Training Behaviors — Interview Grill, Learning rate, item 10'
        """
        parts = [TITLES.get(self.source, self.source)]
        if self.section:
            parts.append(self.section)
        if self.question_id and self.question_id.startswith(f"{self.source}-"):
            parts.append(f"item {int(self.question_id.rsplit('-', 1)[1])}")
        return ", ".join(parts)


@dataclass(frozen=True)
class IndexReport:
    added: int
    removed: int
    total: int
    seconds: float


def split_passages(text: str, source: str, size: int = 800) -> list[Chunk]:
    """Paragraph-aligned pieces of at most ~`size` characters, with offsets."""
    chunks: list[Chunk] = []
    start = None
    end = 0
    pos = 0
    for para in text.split("\n\n"):
        p_start = text.find(para, pos)
        pos = p_start + len(para)
        if not para.strip():
            continue
        if start is not None and pos - start > size:
            chunks.append(Chunk(text[start:end].strip(), source, "passage", start=start, end=end))
            start = None
        if start is None:
            start = p_start
        end = pos
    if start is not None:
        chunks.append(Chunk(text[start:end].strip(), source, "passage", start=start, end=end))
    return chunks


def build_chunks(bank: Bank, settings: Settings) -> list[Chunk]:
    texts = {doc: p.read_text(encoding="utf-8") for doc, p in source_files(settings.corpus_dir).items()}
    chunks: list[Chunk] = []
    for q in bank:
        loc = q.location
        prompt = f"{q.question} {q.short_answer}".strip()
        chunks.append(Chunk(prompt, q.source, "question", q.id, loc.section, loc.start, loc.end))
        chunks.append(Chunk(q.reference, q.source, "reference", q.id, loc.section, loc.start, loc.end))
        if q.source in texts:
            passage = texts[q.source][loc.start : loc.end].strip()
            if passage and passage != q.reference:
                chunks.append(Chunk(passage, q.source, "passage", q.id, loc.section, loc.start, loc.end))
    user_dir = settings.home / USER_DOCS
    if user_dir.exists():
        for path in sorted(user_dir.glob("*.txt")):
            chunks.extend(split_passages(path.read_text(encoding="utf-8"), path.stem))
    unique = {c.id: c for c in chunks if c.text}
    return list(unique.values())


def make_client(settings: Settings) -> ClientAPI:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        try:
            return chromadb.HttpClient(
                host=url.hostname or "127.0.0.1",
                port=url.port or 8000,
                ssl=url.scheme == "https",
                settings=chroma_settings,
            )
        except Exception as exc:  # chromadb raises several types for a dead server
            raise BackendUnavailable(
                f"Cannot reach the Chroma server at {settings.chroma_url} ({exc}). "
                "Start it with `chroma run --path DIR --host 127.0.0.1 --port 8000` "
                "or unset INTERVIEWER_CHROMA_URL to use the local store."
            ) from exc
    settings.ensure_home()
    try:
        return chromadb.PersistentClient(str(settings.chroma_path), settings=chroma_settings)
    except Exception as exc:
        raise StorageError(
            f"The vector store at {settings.chroma_path} cannot be opened ({exc}). "
            f"Delete that folder and run `interviewer index` to rebuild it."
        ) from exc


class Store:
    """The corpus index. Opens lazily; `ensure_index` builds or updates it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._collection: Collection | None = None
        self._lock = threading.Lock()

    @property
    def collection(self) -> Collection:
        with self._lock:
            if self._collection is None:
                client = make_client(self.settings)
                self._collection = client.get_or_create_collection(
                    COLLECTION, metadata={"hnsw:space": "cosine"}, embedding_function=None
                )
            return self._collection

    def count(self) -> int:
        return int(self.collection.count())

    def ensure_index(self, bank: Bank) -> IndexReport:
        """Add missing chunks, drop stale ones. Embeds only what is new."""
        t0 = time.perf_counter()
        wanted = {c.id: c for c in build_chunks(bank, self.settings)}
        have = set(self.collection.get(include=[])["ids"])
        new = [c for cid, c in wanted.items() if cid not in have]
        stale = sorted(have - set(wanted))
        if stale:
            self.collection.delete(ids=stale)
        if new:
            vectors = embedder_for(self.settings).encode([c.text for c in new], cache=False)
            for i in range(0, len(new), 256):
                part = new[i : i + 256]
                self.collection.add(
                    ids=[c.id for c in part],
                    embeddings=vectors[i : i + 256].tolist(),
                    documents=[c.text for c in part],
                    metadatas=[c.metadata() for c in part],  # type: ignore[misc]
                )
        return IndexReport(len(new), len(stale), len(wanted), time.perf_counter() - t0)

    def search(self, text: str, k: int = 5, kinds: tuple[str, ...] | None = None) -> list[Hit]:
        if self.count() == 0:
            raise CorpusNotIndexed("The vector store is empty. Run `interviewer index` to build it.")
        vector = embedder_for(self.settings).encode([text])[0]
        where: dict[str, Any] | None = {"kind": {"$in": list(kinds)}} if kinds else None
        res = self.collection.query(
            query_embeddings=[vector.tolist()],
            n_results=k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        hits = []
        docs = (res["documents"] or [[]])[0]
        metas = (res["metadatas"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        for doc, meta, dist in zip(docs, metas, dists, strict=True):
            hits.append(
                Hit(
                    question_id=str(meta["question_id"]) or None,
                    source=str(meta["source"]),
                    kind=str(meta["kind"]),
                    section=str(meta["section"]),
                    start=int(meta["start"]),  # type: ignore[arg-type]
                    end=int(meta["end"]),  # type: ignore[arg-type]
                    text=doc,
                    score=round(1.0 - float(dist), 4),
                )
            )
        return hits

    def match_questions(self, text: str, k: int = 3) -> list[Hit]:
        """Best bank questions for a text, one hit per question, best first."""
        hits = self.search(text, k=max(12, 4 * k), kinds=("question", "reference"))
        seen: dict[str, Hit] = {}
        for hit in hits:
            if hit.question_id and hit.question_id not in seen:
                seen[hit.question_id] = hit
        return list(seen.values())[:k]

    def passages_for(self, text: str, question_id: str | None = None, k: int = 2) -> list[Hit]:
        """Source passages that ground a follow-up or a model answer, for citing."""
        hits = self.search(text, k=k * 4, kinds=("passage", "reference"))
        if question_id:
            hits.sort(key=lambda h: (h.question_id != question_id, -h.score))
        return hits[:k]


def save_user_document(settings: Settings, path: Path, text: str) -> Path:
    folder = settings.home / USER_DOCS
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{path.stem}.txt"
    target.write_text(text, encoding="utf-8")
    return target
