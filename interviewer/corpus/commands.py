"""`interviewer index | questions | search | ingest`: the corpus commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from interviewer.corpus.bank import derive_key_points, load_bank, load_user_questions, save_user_questions
from interviewer.corpus.parsers import detect_and_parse
from interviewer.corpus.schema import Location, Question, Rubric
from interviewer.corpus.store import Store, save_user_document
from interviewer.errors import BadInput
from interviewer.settings import Settings


def index_corpus(settings: Settings) -> None:
    """The vector store: chunks of every document, embedded where they changed."""
    report = Store(settings).ensure_index(load_bank(settings))
    print(
        f"index: {report.total} chunks ({report.added} embedded, {report.removed} removed) "
        f"in {report.seconds:.2f} s"
    )


def run_questions(settings: Settings, args: argparse.Namespace) -> int:
    bank = load_bank(settings)
    bank.check_filter(args.topic, args.source)
    questions = bank.filter(topics=args.topic, difficulty=args.difficulty, source=args.source)
    if args.json:
        json.dump([q.to_public_json() for q in questions], sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    for q in questions:
        print(f"{q.id:8} {q.topic:24} {q.difficulty:6} {q.title[:90]}")
    print(f"{len(questions)} questions", file=sys.stderr)
    return 0


def _ensure_index(settings: Settings) -> Store:
    store = Store(settings)
    if store.count() == 0:
        print("building the index (first run)...", file=sys.stderr)
        store.ensure_index(load_bank(settings))
    return store


def run_search(settings: Settings, args: argparse.Namespace) -> int:
    if not args.text.strip():
        raise BadInput("Empty search text: give a few words to search for.")
    hits = _ensure_index(settings).search(args.text, k=args.k)
    if args.json:
        json.dump([h.to_json() for h in hits], sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    for rank, h in enumerate(hits, 1):
        label = h.question_id or h.source
        print(f"{rank}. [{h.score:.3f}] {label} ({h.kind}, {h.citation()})")
        print("   " + h.text[:200].replace("\n", " "))
    return 0


def read_document(path: Path) -> str:
    """Text of a Markdown, text or PDF file."""
    if not path.exists():
        raise BadInput(f"{path}: no such file.")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        try:
            return "\n\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
        except (PdfReadError, ValueError, OSError) as exc:
            raise BadInput(f"{path}: cannot read this PDF ({exc}).") from exc
    if suffix not in (".md", ".markdown", ".txt", ".text", ""):
        raise BadInput(f"{path}: unsupported type {suffix!r}; give Markdown, text or PDF files.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 text.") from exc


def ingest(settings: Settings, paths: list[Path]) -> tuple[int, int]:
    """Store, chunk and index user documents; extract questions where the shape allows.

    Returns (documents, questions extracted).
    """
    existing = {q.id: q for q in load_user_questions(settings.home)}
    extracted = 0
    for path in paths:
        text = read_document(path)
        if not text.strip():
            raise BadInput(f"{path}: the document is empty.")
        stored = save_user_document(settings, path, text)
        source = stored.stem
        for parsed in detect_and_parse(text, path.name):
            qid = f"{source}-{parsed.number:02d}"
            existing[qid] = Question(
                id=qid,
                source=source,
                location=Location(file=path.name, start=parsed.location.start, end=parsed.location.end),
                kind="question",
                topic="general",
                difficulty=parsed.difficulty or "medium",  # type: ignore[arg-type]
                question=parsed.question,
                short_answer=parsed.short_answer,
                reference=parsed.reference or parsed.short_answer,
                rubric=Rubric(
                    key_points=derive_key_points(parsed.reference, parsed.short_answer), derived=True
                ),
            )
            extracted += 1
    save_user_questions(settings.home, list(existing.values()))
    Store(settings).ensure_index(load_bank(settings, fresh=True))
    return len(paths), extracted


def run_ingest(settings: Settings, args: argparse.Namespace) -> int:
    docs, questions = ingest(settings, [Path(p) for p in args.paths])
    print(f"ingested {docs} document(s); {questions} question(s) extracted; index updated")
    return 0
