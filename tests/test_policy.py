"""What to ask next: ratings, priorities and seeded session plans (pure functions, no index)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Rating, State

from interviewer.corpus.bank import load_bank
from interviewer.corpus.schema import KeyPoint, Location, Question, Rubric
from interviewer.interview.policy import (
    History,
    Overlap,
    plan_session,
    priority,
    rating_for,
    review,
    schedule_score,
)
from interviewer.settings import load_settings

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def make_question(qid: str, concept: str | None = None) -> Question:
    return Question(
        id=qid,
        source="t",
        location=Location(file="t.txt", start=0, end=1),
        topic="general",
        difficulty="medium",
        question=f"Question {qid}?",
        reference="An answer.",
        rubric=Rubric(key_points=[KeyPoint(text="a point")]),
        concept=concept,
    )


QUESTIONS = [make_question(f"q{i:02d}") for i in range(20)]
CONCEPT = {q.id: q.id for q in QUESTIONS}


@pytest.mark.parametrize(
    ("score", "rating"),
    [(0.0, Rating.Again), (1.5, Rating.Again), (2.0, Rating.Hard), (2.5, Rating.Hard), (3.0, Rating.Good),
     (4.0, Rating.Good), (4.5, Rating.Easy), (5.0, Rating.Easy)],
)  # fmt: skip
def test_grade_to_rating(score: float, rating: Rating) -> None:
    assert rating_for(score) == rating


def test_review_schedules_weak_answers_soon_and_strong_ones_later() -> None:
    weak = review(None, "q", 1.0, NOW)
    strong = review(None, "q", 5.0, NOW)
    assert weak.due - NOW == timedelta(minutes=1)  # Again: first learning step
    assert strong.due - NOW == timedelta(days=8) and strong.state == State.Review
    assert weak.due.tzinfo is not None
    assert review(weak, "q", 1.0, NOW + timedelta(minutes=5)).due > weak.due


def test_schedule_score_caps_hinted_answers_and_counts_no_answer_as_zero() -> None:
    assert schedule_score(5.0, 0) == 5.0
    assert schedule_score(5.0, 1) == 2.5
    assert schedule_score(1.0, 2) == 1.0
    assert schedule_score(None, 0) == 0.0


def test_priority_orders_weak_due_new_mastered() -> None:
    later = NOW + timedelta(days=5)
    weak_due = priority(History("a", 1.0, NOW - timedelta(minutes=1)), NOW)
    weak = priority(History("a", 1.0, later), NOW)
    new = priority(None, NOW)
    mastered = priority(History("a", 5.0, later), NOW)
    mastered_due = priority(History("a", 5.0, NOW), NOW)
    assert weak_due > weak > new > mastered
    assert mastered_due > new  # a due review beats new material


def test_plan_is_deterministic_for_a_seed() -> None:
    def plan(seed: int) -> list[str]:
        return plan_session(QUESTIONS, 5, {}, CONCEPT.__getitem__, NOW, random.Random(seed))

    assert plan(1) == plan(1)
    assert len({tuple(plan(s)) for s in range(10)}) > 1  # equal priorities vary by seed


def test_plan_favours_the_weakest_questions() -> None:
    later = NOW + timedelta(days=3)
    history = {
        "q03": History("q03", 0.5, later),
        "q11": History("q11", 2.0, later),
        "q07": History("q07", 5.0, later),
        "q08": History("q08", 5.0, later),
    }
    for seed in range(20):
        plan = plan_session(QUESTIONS, 4, history, CONCEPT.__getitem__, NOW, random.Random(seed))
        assert plan[:2] == ["q03", "q11"]
        assert "q07" not in plan and "q08" not in plan


def test_plan_never_repeats_a_concept() -> None:
    questions = [make_question(f"w{i}", "warmup") for i in range(5)] + QUESTIONS[:3]
    concept = {q.id: q.concept or q.id for q in questions}
    for seed in range(10):
        plan = plan_session(questions, 8, {}, concept.__getitem__, NOW, random.Random(seed))
        assert len(plan) == 4 and sum(qid.startswith("w") for qid in plan) == 1


def test_plan_takes_no_more_than_asked() -> None:
    assert len(plan_session(QUESTIONS, 3, {}, CONCEPT.__getitem__, NOW, random.Random(0))) == 3
    assert plan_session([], 3, {}, CONCEPT.__getitem__, NOW, random.Random(0)) == []


def test_a_session_never_asks_a_question_another_one_has_already_covered() -> None:
    bank = load_bank(load_settings())
    overlap = Overlap(list(bank))
    assert overlap.repeats("000-19", "002-29") or bank.concept_of("000-19") == bank.concept_of("002-29")
    assert overlap.repeats("000-04", "002-38")  # warmup and cosine, then "Decay to?"
    assert not overlap.repeats("002-01", "004-07")
    for seed in range(100):
        plan = plan_session(list(bank), 20, {}, bank.concept_of, NOW, random.Random(seed), overlap.repeats)
        assert not any(overlap.repeats(a, b) for i, a in enumerate(plan) for b in plan[i + 1 :]), seed
