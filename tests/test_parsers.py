"""The parsers extract exactly the questions each source document holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from interviewer.corpus.parsers import (
    PARSERS,
    detect_and_parse,
    parse_grill,
    parse_question_list,
    parse_tagged_bullets,
    parse_teasers,
)
from interviewer.settings import REPO_ROOT

SOURCES = {p.name[:3]: p for p in (REPO_ROOT / "corpus" / "sources").glob("0*_*.txt")}


def parse(doc: str):  # type: ignore[no-untyped-def]
    path: Path = SOURCES[doc]
    return PARSERS[doc](path.read_text(encoding="utf-8"), path.name)


@pytest.mark.parametrize(("doc", "count"), [("000", 21), ("002", 45), ("003", 43), ("004", 23)])
def test_each_document_yields_its_question_count(doc: str, count: int) -> None:
    assert len(parse(doc)) == count


def test_grill_has_35_numbered_questions_and_10_quick_fire_items() -> None:
    questions = parse("002")
    assert [q.number for q in questions] == list(range(1, 46))
    assert [q.kind for q in questions].count("quick-fire") == 10
    first = questions[0]
    assert first.question == "Healthy loss curve phases?"
    assert first.short_answer.startswith("Warmup")
    assert first.reference.startswith("Three phases")
    assert first.location.section == "Loss curves"
    assert questions[44].question == "Spike — first action?"


def test_every_grill_question_has_its_saying_it_out_loud_paragraph() -> None:
    assert all(q.reference for q in parse("002") if q.kind == "question")


def test_tagged_bullets_keep_the_difficulty_and_the_bullets() -> None:
    questions = parse("003")
    assert {q.difficulty for q in questions} == {"easy", "medium", "hard"}
    bn = questions[0]
    assert bn.question == "What does Batch Normalization do?"
    assert bn.difficulty == "medium"
    assert bn.reference.count("\n- ") == 3  # four bullets


def test_teasers_and_question_list_carry_no_answers() -> None:
    assert all(not q.reference for q in parse("000"))
    assert all(not q.reference and q.question.endswith(("?", ")")) for q in parse("004"))


def test_offsets_point_back_into_the_source_text() -> None:
    for doc in SOURCES:
        text = SOURCES[doc].read_text(encoding="utf-8")
        for q in parse(doc):
            assert q.question[:20] in text[q.location.start : q.location.end] or q.kind == "quick-fire"


def test_known_answer_small_documents() -> None:
    grill = parse_grill("A. X\n\n1. Why? Because.\n\nSaying it out loud. Long answer.\n", "g.txt")
    assert (grill[0].question, grill[0].short_answer, grill[0].reference) == (
        "Why?",
        "Because.",
        "Long answer.",
    )
    tagged = parse_tagged_bullets("Q one?\neasy- a\n- b\nQ two?\nhard- c\n", "t.txt")
    assert [(q.question, q.difficulty, q.reference) for q in tagged] == [
        ("Q one?", "easy", "- a\n- b"),
        ("Q two?", "hard", "- c"),
    ]
    assert len(parse_question_list("Title\n\nWhat is it?\n\nNot a question.\n", "q.txt")) == 1
    assert len(parse_teasers("t\n\n" + "x" * 100 + ". The signal is y.\n", "t.txt")) == 1


def test_user_documents_are_parsed_when_they_have_a_known_shape() -> None:
    assert len(detect_and_parse("1. A? B.\n\nSaying it out loud. C.\n", "u.md")) == 1
    assert detect_and_parse("Just some notes about training.", "u.md") == []
