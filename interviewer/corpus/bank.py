"""The question bank: parsed documents + rubric files -> validated `Question`s.

`load_bank(settings)` reads `corpus/sources/*.txt` with the parsers, overlays
`corpus/rubrics/<doc>.yaml`, adds questions extracted from user documents
(`interviewer ingest`), and validates everything. It does not embed or index
anything (that is `store.py`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from interviewer.corpus.parsers import PARSERS, ParsedQuestion
from interviewer.corpus.schema import (
    TOPICS,
    KeyPoint,
    Location,
    Question,
    Rubric,
    RubricEntry,
    RubricFile,
    ScriptEntry,
    ScriptFile,
)
from interviewer.cues import SAFE_LOADER
from interviewer.errors import BadInput, BankError, QuestionNotFound
from interviewer.settings import Settings

FileModel = TypeVar("FileModel", bound=BaseModel)

USER_QUESTIONS_FILE = "user_questions.json"


# A typed question this close to a bank question's text (difflib ratio, after case and
# punctuation are dropped) is that question: a typo or a missing word, not another question.
NEAR_TEXT = 0.9


def _plain_text(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


@dataclass
class Bank:
    questions: list[Question]
    by_id: dict[str, Question] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {q.id: q for q in self.questions}

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    def get(self, question_id: str) -> Question:
        try:
            return self.by_id[question_id]
        except KeyError:
            raise QuestionNotFound(
                f"No question with id {question_id!r}. List ids with `interviewer questions`."
            ) from None

    def by_text(self, text: str) -> Question | None:
        """The question whose text this is, exactly or nearly ("why warmup" for "Why warmup?").

        Case, punctuation and spacing are ignored; otherwise a text within a few edits of
        exactly one question's (ratio >= NEAR_TEXT) resolves to it.
        """
        wanted = _plain_text(text)
        if not wanted:
            return None
        exact = [q for q in self.questions if _plain_text(q.question) == wanted]
        if exact:
            return exact[0]
        scored = sorted(
            ((SequenceMatcher(None, wanted, _plain_text(q.question)).ratio(), q) for q in self.questions),
            key=lambda pair: pair[0],
            reverse=True,
        )
        best, runner_up = scored[0], scored[1] if len(scored) > 1 else (0.0, None)
        if best[0] >= NEAR_TEXT and best[0] - runner_up[0] > 0.02:
            return best[1]
        return None

    def concept_of(self, question_id: str) -> str:
        """Questions without a shared concept are their own concept."""
        return self.by_id[question_id].concept or question_id

    def check_filter(self, topics: list[str] | None = None, source: str | None = None) -> None:
        """BadInput naming the valid values when a topic or source is not the bank's."""
        unknown = [t for t in topics or () if t not in TOPICS]
        if unknown:
            raise BadInput(f"Unknown topic {unknown[0]!r}; use one of: {', '.join(TOPICS)}.")
        sources = sorted({q.source for q in self.questions})
        if source and source not in sources:
            raise BadInput(f"Unknown source {source!r}; use one of: {', '.join(sources)}.")

    def filter(
        self,
        topics: list[str] | None = None,
        difficulty: str | None = None,
        source: str | None = None,
    ) -> list[Question]:
        return [
            q
            for q in self.questions
            if (not topics or q.topic in topics)
            and (not difficulty or q.difficulty == difficulty)
            and (not source or q.source == source)
        ]


def source_files(corpus_dir: Path) -> dict[str, Path]:
    """{"002": corpus/sources/002_....txt, ...} for the bundled documents."""
    found = {p.name[:3]: p for p in sorted((corpus_dir / "sources").glob("0*_*.txt"))}
    missing = sorted(set(PARSERS) - set(found))
    if missing:
        raise BankError(
            f"Source documents missing from {corpus_dir / 'sources'}: {', '.join(missing)}. "
            "Restore them with `git checkout corpus/`."
        )
    return found


def read_rubric_file(path: Path) -> RubricFile:
    return _read_yaml(path, RubricFile)


def read_script_file(path: Path) -> ScriptFile:
    return _read_yaml(path, ScriptFile)


def _read_yaml(path: Path, model: type[FileModel]) -> FileModel:
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise BankError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise BankError(f"{path}: {problems}") from exc


def apply_script(question: Question, entry: ScriptEntry, where: str) -> Question:
    """The question with its interview script: `ask`, `hints`, a probe per key point and a
    challenge per misconception. The script must name the rubric's points in its order."""
    at = f"{where}: questions.{question.id!r}"
    for name, lines, wanted in (
        ("probes", [p.point for p in entry.probes], [kp.text for kp in question.key_points]),
        (
            "challenges",
            [c.misconception for c in entry.challenges],
            [m.text for m in question.rubric.misconceptions],
        ),
    ):
        if len(lines) != len(wanted):
            raise BankError(
                f"{at}.{name}: {len(lines)} lines for {len(wanted)} in the rubric; write one each, in order"
            )
        for n, (got, want) in enumerate(zip(lines, wanted, strict=True)):
            if got.strip() != want.strip():
                raise BankError(f"{at}.{name}[{n}]: {got!r} is not the rubric's {want!r}; copy it exactly")
    rubric = question.rubric.model_copy(update={
        "key_points": [kp.model_copy(update={"probe": p.probe}) for kp, p in zip(question.key_points, entry.probes, strict=True)],
        "misconceptions": [m.model_copy(update={"challenge": c.challenge})
                           for m, c in zip(question.rubric.misconceptions, entry.challenges, strict=True)],
    })  # fmt: skip
    return question.model_copy(update={"ask": entry.ask, "hints": list(entry.hints), "rubric": rubric})


_CLAUSE_SPLIT = re.compile(r"\s*(?:;|—| - |[.!?] |[.!?]$|\n|, and |, but |, while |, whereas )\s*")
_BULLET = re.compile(r"^\s*[-*•]\s+|^\s*\(?\d+\)\s*", re.M)


def derive_key_points(reference: str, short_answer: str = "", limit: int = 8) -> list[KeyPoint]:
    """Key points for a reference answer that has no hand-written rubric.

    Sentences (or bullets) of the reference become core points; very long
    ones are split at semicolons and dashes. Used for user documents and for
    `grade --question TEXT --reference TEXT`.

    >>> [k.text for k in derive_key_points("Clip at 1.0. Use BF16; checkpoint often.")]
    ['Clip at 1.0', 'Use BF16', 'checkpoint often']
    """
    text = _BULLET.sub("", reference.strip()) or short_answer.strip()
    pieces = [p.strip(" .,:") for p in _CLAUSE_SPLIT.split(text)]
    pieces = [p for p in pieces if len(re.findall(r"[A-Za-z0-9]+", p)) >= 2]
    if not pieces and text:
        pieces = [text.strip(" .")]
    if len(pieces) > limit:
        # Keep the longest pieces (most content), in document order.
        keep = sorted(sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))[:limit])
        pieces = [pieces[i] for i in keep]
    return [KeyPoint(text=p, core=True) for p in pieces]


def _build_question(doc: str, parsed: ParsedQuestion, entry: RubricEntry | None, where: str) -> Question:
    qid = f"{doc}-{parsed.number:02d}"
    entry = entry or RubricEntry()
    reference = entry.reference or parsed.reference
    if not reference:
        raise BankError(f"{where}: questions.{qid!r}.reference is required ({doc} has no answers)")
    key_points = entry.key_points or derive_key_points(reference, parsed.short_answer)
    derived = entry.key_points is None
    try:
        return Question(
            id=qid,
            source=doc,
            location=parsed.location,
            kind=parsed.kind,  # type: ignore[arg-type]
            topic=entry.topic or "general",
            difficulty=entry.difficulty or parsed.difficulty or "medium",  # type: ignore[arg-type]
            question=entry.question or parsed.question,
            note=parsed.note and not entry.question,
            short_answer=entry.short_answer or parsed.short_answer,
            reference=reference,
            rubric=Rubric(
                key_points=key_points,
                misconceptions=entry.misconceptions,
                numeric=entry.numeric,
                derived=derived,
            ),
            concept=entry.concept,
        )
    except ValidationError as exc:
        raise BankError(f"{where}: questions.{qid!r}: {exc}") from exc


def load_bundled(corpus_dir: Path) -> list[Question]:
    out: list[Question] = []
    for doc, path in source_files(corpus_dir).items():
        parsed = PARSERS[doc](path.read_text(encoding="utf-8"), path.name)
        rubric_path = corpus_dir / "rubrics" / f"{doc}.yaml"
        entries = read_rubric_file(rubric_path).questions if rubric_path.exists() else {}
        ids = {f"{doc}-{p.number:02d}" for p in parsed}
        stray = sorted(set(entries) - ids)
        if stray:
            raise BankError(f"{rubric_path}: questions {stray} do not exist in {path.name}")
        script_path = corpus_dir / "script" / f"{doc}.yaml"
        script = read_script_file(script_path).questions if script_path.exists() else {}
        stray = sorted(set(script) - ids)
        if stray:
            raise BankError(f"{script_path}: questions {stray} do not exist in {path.name}")
        for p in parsed:
            qid = f"{doc}-{p.number:02d}"
            question = _build_question(doc, p, entries.get(qid), str(rubric_path))
            if qid in script:
                question = apply_script(question, script[qid], str(script_path))
            out.append(question)
    return out


def load_user_questions(home: Path) -> list[Question]:
    path = home / USER_QUESTIONS_FILE
    if not path.exists():
        return []
    try:
        return [Question.model_validate(q) for q in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, ValidationError) as exc:
        raise BankError(
            f"{path} is corrupt ({exc.__class__.__name__}). Delete it and re-run "
            "`interviewer ingest` for your documents."
        ) from exc


def save_user_questions(home: Path, questions: list[Question]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    path = home / USER_QUESTIONS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([q.model_dump(mode="json") for q in questions], indent=1))
    tmp.replace(path)


_BANK_CACHE: dict[tuple[Path, Path], Bank] = {}


def load_bank(settings: Settings, *, fresh: bool = False) -> Bank:
    """The whole bank, cached per (corpus, home) so repeated calls are free."""
    key = (settings.corpus_dir, settings.home)
    if fresh or key not in _BANK_CACHE:
        questions = load_bundled(settings.corpus_dir) + load_user_questions(settings.home)
        _BANK_CACHE[key] = Bank(questions)
    return _BANK_CACHE[key]


def make_user_question(question: str, reference: str, *, topic: str = "general") -> Question:
    """A question that is not in the bank, graded against a free reference answer.

    Its key points are derived from the reference (see `derive_key_points`).
    """
    if not reference.strip():
        raise BankError("The reference answer is empty: give --reference TEXT.")
    digest = hashlib.sha1(f"{question}\n{reference}".encode()).hexdigest()[:8]
    return Question(
        id=f"user-{digest}",
        source="user",
        location=Location(file="", start=0, end=0),
        kind="user",
        topic=topic,
        difficulty="medium",
        question=question or "(no question given)",
        reference=reference,
        rubric=Rubric(key_points=derive_key_points(reference), derived=True),
    )
