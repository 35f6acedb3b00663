"""What to ask next: a session plan from the candidate's options and their history.

A question's priority mixes three things: never seen (1.0), how weak its last
graded answer was, and whether the spaced-repetition schedule (fsrs) says it
is due. The plan takes the highest priorities, with a little seeded jitter so
equal questions vary between sessions, and never two questions of one concept.

    >>> rng = random.Random(0)
    >>> history = {"a": History("a", last_score=1.0, due=NOW, reviews=1)}
    >>> priority(None, NOW), round(priority(history["a"], NOW), 2)
    (1.0, 2.8)

This module reads no database (progress.py hands it `History` values) and
does not decide follow-ups (graph.py does).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fsrs import Card, Rating, Scheduler

from interviewer.corpus.schema import Question
from interviewer.grading.text import IDF, content_stems

NOW = datetime(2026, 1, 1, tzinfo=UTC)  # for the docstring examples
NEW = 1.0  # priority of a question never graded
JITTER = 0.3  # seeded noise among near-equal priorities
SCHEDULER = Scheduler(desired_retention=0.9, enable_fuzzing=False)
# One question repeats another when at least MOSTLY of its core points are each said by one
# of the other's key points: POINT_SAID of the point's content words (IDF-weighted, its own
# question's words left out) are in that key point or its alternatives. Measured against the
# other's reference answer instead, one-point quick-fire items match almost anything (421
# of the bank's 8,646 pairs at 0.5 / 0.5); point against point at 0.7 / 2/3 flags 48, each
# read: 000-04 (warmup and cosine) and 002-38 "Decay to?", 002-03 and 002-19 (spikes), ...
POINT_SAID = 0.7
MOSTLY = 2 / 3


@dataclass(frozen=True)
class History:
    """What the progress store knows about one question."""

    question_id: str
    last_score: float | None  # 0-5, the score the schedule was last updated with
    due: datetime | None  # when fsrs wants it again (UTC)
    reviews: int = 0


def rating_for(score: float) -> Rating:
    """The fsrs rating for a 0-5 grade.

    >>> [rating_for(s).name for s in (0, 2, 3.5, 4.5)]
    ['Again', 'Hard', 'Good', 'Easy']
    """
    if score < 2:
        return Rating.Again
    if score < 3:
        return Rating.Hard
    if score < 4.5:
        return Rating.Good
    return Rating.Easy


def new_card(question_id: str, at: datetime) -> Card:
    # A stable card id per question keeps the stored cards reproducible.
    return Card(card_id=zlib.crc32(question_id.encode()), due=at)


def review(card: Card | None, question_id: str, score: float, at: datetime) -> Card:
    """The card after grading `score` at `at` (a new card when there was none)."""
    at = at.astimezone(UTC).replace(tzinfo=UTC)
    card = card or new_card(question_id, at)
    updated, _log = SCHEDULER.review_card(card, rating_for(score), review_datetime=at)
    return updated


def schedule_score(first_score: float | None, hints_before_answer: int) -> float:
    """The score the schedule sees: the cold answer, capped at Hard when a hint came first.

    A skipped or revealed question (no answer) counts as 0, so it comes back soon.
    """
    if first_score is None:
        return 0.0
    return min(first_score, 2.5) if hints_before_answer else first_score


def priority(history: History | None, now: datetime) -> float:
    """Higher is asked sooner: weak and due questions above new ones, mastered ones last."""
    if history is None or history.last_score is None:
        return NEW
    weakness = 1.0 - max(0.0, min(5.0, history.last_score)) / 5.0
    due = history.due is not None and history.due <= now
    return 0.2 + 2.0 * weakness + (1.0 if due else 0.0)


class Overlap:
    """Which questions ask again what another already covered (002-29 "Prevention for
    spikes?" after 000-19, whose answer covers causes, recovery and prevention)."""

    def __init__(self, questions: Sequence[Question]) -> None:
        self.by_id = {q.id: q for q in questions}
        self.idf = IDF([q.reference for q in questions] + [q.question for q in questions])
        self._points: dict[str, list[set[str]]] = {}
        self._memo: dict[tuple[str, str], bool] = {}

    def _words(self, qid: str) -> list[set[str]]:
        if qid not in self._points:
            self._points[qid] = [
                set(content_stems(" ".join([kp.text, *kp.alternatives]))) for kp in self.by_id[qid].key_points
            ]
        return self._points[qid]

    def covers(self, first: str, later: str) -> bool:
        """True when `first`'s key points say most of `later`'s core points."""
        key = (first, later)
        if key not in self._memo:
            q, theirs = self.by_id[later], self._words(first)
            asked = set(content_stems(q.question))
            core = [kp for kp in q.key_points if kp.core]
            said = sum(max(self.idf.recall(kp.text, w, asked) for w in theirs) >= POINT_SAID for kp in core)
            self._memo[key] = said >= 1 and said >= MOSTLY * len(core)
        return self._memo[key]

    def repeats(self, a: str, b: str) -> bool:
        """Either question's answer covers most of the other's core points."""
        return a in self.by_id and b in self.by_id and (self.covers(a, b) or self.covers(b, a))


def plan_session(
    candidates: Sequence[Question],
    count: int,
    history: dict[str, History],
    concept_of: Callable[[str], str],
    now: datetime,
    rng: random.Random,
    repeats: Callable[[str, str], bool] | None = None,
) -> list[str]:
    """Up to `count` question ids, most urgent first, one per concept, and none that
    `repeats` one already planned (see `Overlap`).

    Deterministic for a given `rng` seed: the same options, history and seed
    give the same plan.
    """
    ranked = sorted(
        candidates,
        key=lambda q: (-(priority(history.get(q.id), now) + rng.uniform(0, JITTER)), q.id),
    )
    plan: list[str] = []
    concepts: set[str] = set()
    for question in ranked:
        concept = concept_of(question.id)
        if concept in concepts or (repeats and any(repeats(p, question.id) for p in plan)):
            continue
        plan.append(question.id)
        concepts.add(concept)
        if len(plan) == count:
            break
    return plan
