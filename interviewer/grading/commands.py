"""`interviewer grade`: one answer, or a JSONL batch.

Batch input lines: {"question_id": ...} or {"question": ..., ["reference": ...]},
plus "answer". Output lines: the input plus "score" and "grade". A malformed
line is reported with its line number (stderr, and an "error" field in the
output) and does not stop the rest.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from interviewer.corpus.bank import Bank, load_bank, make_user_question
from interviewer.corpus.commands import index_corpus
from interviewer.corpus.schema import Question
from interviewer.corpus.store import Store
from interviewer.errors import BadInput, InterviewerError, QuestionNotFound
from interviewer.grading import Grader, make_grader
from interviewer.grading.grade import Grade
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import Settings

log = logging.getLogger(__name__)

MATCH_FLOOR = 0.55  # below this similarity a free-text question is "not in the bank"


def resolve_question(
    settings: Settings,
    bank: Bank,
    *,
    question_id: str | None = None,
    question: str | None = None,
    reference: str | None = None,
) -> Question:
    """A bank question by id, a free question with a reference, a bank question by its (near-)exact
    text, or the bank's best match by meaning."""
    if question_id:
        return bank.get(question_id)
    if reference is not None:
        return make_user_question(question or "", reference)
    if not question or not question.strip():
        raise BadInput(
            "Give --question-id ID, or --question TEXT (with --reference TEXT if it is not in the bank)."
        )
    exact = bank.by_text(question)
    if exact is not None:
        return exact
    if question.strip() in bank.by_id:  # an id given as the question ("002-26")
        return bank.get(question.strip())
    store = Store(settings)
    if store.count() == 0:
        store.ensure_index(bank)
    hits = store.match_questions(question, k=1)
    if not hits or hits[0].score < MATCH_FLOOR:
        raise QuestionNotFound(
            f"No bank question matches {question[:60]!r} closely enough; "
            "give its reference answer with --reference TEXT."
        )
    return bank.get(hits[0].question_id or "")


def print_grade(question: Question, grade: Grade) -> None:
    marks = {"covered": "+", "partial": "~", "missed": "-"}
    print(f"{question.id}: {question.title}")
    print(
        f"score {grade.score:g}/5  ({grade.grader.grader} {grade.grader.version}, {grade.latency_ms:.0f} ms)"
    )
    for kp in grade.key_points:
        core = "" if kp.core else " (optional)"
        quote = f'  <- "{kp.evidence}"' if kp.evidence else ""
        print(f"  [{marks[kp.status]}] {kp.text}{core}{quote}")
    for m in grade.misconceptions:
        print(f'  [!] misconception: {m.text}  <- "{m.evidence}"')
    if grade.numeric:
        n = grade.numeric
        found = f"{n.found_text}, the question's own" if n.restated else n.found_text or "none"
        print(f"  [#] number: {n.verdict} (target {n.target:g} {n.unit}, found {found})")
    if grade.flags:
        print("  flags: " + ", ".join(grade.flags))
    if grade.grader.fallback:
        print(f"  NOTE: fell back to the embedded grader: {grade.grader.fallback}")
    print(grade.feedback)


def _read_answer(args: argparse.Namespace) -> str:
    if args.answer_file:
        path = Path(args.answer_file)
        if not path.exists():
            raise BadInput(f"{path}: no such file.")
        return path.read_text(encoding="utf-8", errors="replace")
    if args.answer is None:
        raise BadInput("Give the answer with --answer TEXT or --answer-file FILE.")
    return str(args.answer)


def grade_record(settings: Settings, bank: Bank, grader: Grader, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise BadInput("each line must be a JSON object")
    if not isinstance(record.get("answer"), str):
        raise BadInput('missing "answer" (a string)')
    for key in ("question_id", "question", "reference"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise BadInput(f'"{key}" must be a string, not {type(record[key]).__name__}')
    if not (record.get("question_id") or record.get("question")):
        raise BadInput('needs "question_id" or "question"')
    question = resolve_question(
        settings,
        bank,
        question_id=record.get("question_id"),
        question=record.get("question"),
        reference=record.get("reference"),
    )
    grade = grader.grade(question, record["answer"])
    return {**record, "matched_question_id": question.id, "score": grade.score, "grade": grade.to_json()}


def run_batch(settings: Settings, grader: Grader, src: Path, out: Path | None) -> int:
    if not src.exists():
        raise BadInput(f"{src}: no such file.")
    bank = load_bank(settings)
    failures = 0
    sink = out.open("w", encoding="utf-8") if out else sys.stdout
    try:
        for number, line in enumerate(src.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
            if not line.strip():
                continue
            try:
                result = grade_record(settings, bank, grader, json.loads(line))
            except (json.JSONDecodeError, InterviewerError, ValueError) as exc:
                # ValueError covers pydantic's ValidationError: a record the schema cannot hold
                failures += 1
                log.info("%s:%d not graded", src, number, exc_info=True)
                reason = f"not valid JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else str(exc)
                print(f"{src}:{number}: {reason}", file=sys.stderr)
                result = {"line": number, "error": reason}
            sink.write(json.dumps(result, ensure_ascii=False) + "\n")
    finally:
        if out:
            sink.close()
    if failures:
        print(f"{failures} line(s) could not be graded (see above)", file=sys.stderr)
    return 0


def run_grade(settings: Settings, args: argparse.Namespace) -> int:
    grader = make_grader(args.backend or settings.grading_backend(), settings)  # a flag is explicit
    if args.batch:
        return run_batch(settings, grader, Path(args.batch), Path(args.out) if args.out else None)
    bank = load_bank(settings)
    question = resolve_question(
        settings, bank, question_id=args.question_id, question=args.question, reference=args.reference
    )
    grade = grader.grade(question, _read_answer(args))
    if args.json:
        print(json.dumps({"question_id": question.id, "score": grade.score, **grade.to_json()}, indent=1))
    else:
        print_grade(question, grade)
    return 0


def run_index(settings: Settings, args: argparse.Namespace) -> int:
    """`interviewer index`: the vector store, then every rubric's vectors for the grader."""
    index_corpus(settings)
    if settings.grader == "rubric":
        t0 = time.perf_counter()
        grader = RubricGrader(settings)
        loaded, computed = grader.prime_bank(chunk=0)
        print(
            f"rubric vectors: {loaded} kept, {computed} embedded in {time.perf_counter() - t0:.2f} s "
            f"({grader.vector_cache_path().name})"
        )
    return 0
