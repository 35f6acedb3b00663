"""The weakness report: what to study next, from one session or from all of them.

    report = build_report(manager, session_id="27e4a5fcf0ed")   # or session_id=None: all sessions
    report_render.to_markdown(report)          # what `interviewer report` prints
    report_render.to_html(report, settings)    # one self-contained file, charts inline

A report holds per-topic mastery, the score of each question (cold and with
follow-ups), the missed core key points grouped by topic with an excerpt of the
model answer and its source, the misconceptions stated, the speech figures of
spoken answers and their trend, the cold-answer scoreboard of the grill
(document 002) and the next drill the scheduler recommends.

It reads the progress store (attempts, sessions, the fsrs schedule) and each
session's checkpointed events (speech figures). It grades nothing and decides
no schedule (policy.py does); report_render.py and report_charts.py present it.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from interviewer.corpus.store import Hit
from interviewer.errors import BadInput, InterviewerError, QuestionNotFound
from interviewer.interview.policy import History, plan_session, priority
from interviewer.interview.state import AnswerEvent, Attempt, Event, GradeEvent

if TYPE_CHECKING:
    from interviewer.corpus.schema import Question
    from interviewer.interview.progress import SessionRecord
    from interviewer.interview.session import SessionManager

GRILL_SOURCE = "002"
GRILL_ITEMS = 45
GRILL_TARGET = 28  # "Aim for 28+/45 cold."
COLD_SCORE = 3.0  # a drill answer scoring this or more counts as answered cold
# The grill's own self-grading bands, in its words (corpus/sources/002_*.txt, "Self-grading").
GRILL_BANDS = (
    (1, 15, "If you can’t answer 1-15, you don’t understand training dynamics."),
    (16, 30, "If you can’t answer 16-30, you’ll get tripped up on practical questions."),
    (31, 45, "If you can’t answer 31-45, frontier-lab interviews on training behavior will go past you."),
)
DRILL_SIZE = 5
EXCERPT_CHARS = 320


@dataclass(frozen=True)
class QuestionRow:
    """One question as one session left it."""

    session_id: str
    question_id: str
    topic: str
    question: str
    mode: str
    cold: float | None  # the first answer's score; None when skipped or revealed unanswered
    score: float | None  # with follow-ups counted
    outcome: str  # "answered" | "skipped" | "revealed"
    hints: int
    at: str  # ISO time of its last attempt
    missed: list[str] = field(default_factory=list)  # core key points still open


@dataclass(frozen=True)
class MissedPoint:
    question_id: str
    question: str
    point: str
    excerpt: str  # the model answer's sentence closest to the point
    source: str  # "Training Behaviors — Interview Grill, Precision, item 25"


@dataclass(frozen=True)
class StatedMisconception:
    question_id: str
    text: str
    evidence: str  # the candidate's sentence that stated it


@dataclass(frozen=True)
class SpeechSample:
    """The figures of one spoken answer (Transcript.to_json() fields)."""

    session_id: str
    question_id: str
    duration_s: float
    words_per_minute: float
    fillers_per_minute: float
    long_pauses: int


@dataclass(frozen=True)
class Grill:
    answered: list[int]  # item numbers (1-45) answered cold at least once

    def in_band(self, lo: int, hi: int) -> int:
        return sum(lo <= n <= hi for n in self.answered)


@dataclass(frozen=True)
class DrillPick:
    question_id: str
    topic: str
    question: str
    reason: str  # "never asked", "last 1.5/5, due"


@dataclass
class Report:
    title: str
    generated_at: str
    sessions: list[SessionRecord]
    rows: list[QuestionRow]
    mastery: dict[str, tuple[float, int]]  # topic -> (mean score / 5, questions), weakest first
    missed: dict[str, list[MissedPoint]]  # topic -> points
    misconceptions: list[StatedMisconception]
    speech: list[SpeechSample]
    grill: Grill
    next_drill: list[DrillPick]

    @property
    def drill_command(self) -> str:
        topics = "".join(f" --topic {t}" for t in dict.fromkeys(p.topic for p in self.next_drill))
        return f"interviewer practice --mode drill --questions {len(self.next_drill) or DRILL_SIZE}{topics}"


# ---------------------------------------------------------------- gathering


def citation(q: Question) -> str:
    """'Training Behaviors — Interview Grill, Precision, item 25' (offsets stay in the JSON)."""
    hit = Hit(q.id, q.source, q.kind, q.location.section, q.location.start, q.location.end, "", 1.0)
    return hit.citation()


_WORDS = re.compile(r"[a-z0-9]+")


def excerpt_for(point: str, reference: str, limit: int = EXCERPT_CHARS) -> str:
    """The sentence of the model answer sharing most words with the key point.

    >>> excerpt_for("clip at 1.0", "Use AdamW. Clip the global norm at 1.0. Warm up.")
    'Clip the global norm at 1.0.'
    """
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", reference) if s.strip()] or [reference]
    wanted = set(_WORDS.findall(point.lower()))
    best = max(sentences, key=lambda s: len(wanted & set(_WORDS.findall(s.lower()))))
    return best if len(best) <= limit else best[: limit - 1] + "…"


def _question(manager: SessionManager, question_id: str) -> Question | None:
    try:
        return manager.services.bank.get(question_id)
    except QuestionNotFound:  # a user document removed since
        return None


def _events(manager: SessionManager, session_id: str) -> list[Event]:
    try:
        return manager.state(session_id).events
    except InterviewerError:  # checkpoint kept elsewhere or removed: the progress store still reports
        return []


def session_rows(
    manager: SessionManager, record: SessionRecord, attempts: list[Attempt], events: list[Event]
) -> list[QuestionRow]:
    """The session's questions from its attempts; follow-up scores from its grade events."""
    running = {e.question_id: e.running_score for e in events if isinstance(e, GradeEvent)}
    by_question: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_question[a["question_id"]].append(a)
    rows = []
    for qid, group in by_question.items():
        q = _question(manager, qid)
        answers = [a for a in group if a["kind"] == "answer"]
        cold = answers[0]["score"] if answers else None
        if answers:
            covered_later = {a["target_point"] for a in group if a["kind"] == "follow_up" and not a["missed"]}
            missed = [p for p in answers[0]["missed"] if p not in covered_later]
            outcome = "answered"
        else:
            missed = [kp.text for kp in q.key_points if kp.core] if q else []
            outcome = "revealed" if any(a["kind"] == "reveal" for a in group) else "skipped"
        rows.append(
            QuestionRow(
                session_id=record.id,
                question_id=qid,
                topic=q.topic if q else "general",
                question=q.title if q else qid,
                mode=group[0]["mode"],
                cold=cold,
                score=running.get(qid, cold) if answers else None,
                outcome=outcome,
                hints=max(a["hints"] for a in group),
                at=group[-1]["answered_at"],
                missed=missed,
            )
        )
    return rows


def speech_samples(session_id: str, events: list[Event]) -> list[SpeechSample]:
    out = []
    for e in events:
        if isinstance(e, AnswerEvent) and e.audio and e.delivery:
            d = e.delivery
            out.append(
                SpeechSample(
                    session_id,
                    e.question_id or "",
                    float(d.get("duration_s", 0.0)),
                    float(d.get("words_per_minute", 0.0)),
                    float(d.get("fillers_per_minute", 0.0)),
                    len(d.get("long_pauses") or []),
                )
            )
    return out


def grill_score(attempts: list[Attempt]) -> Grill:
    """Grill items answered cold: a drill-mode first answer, no hint taken, scoring 3 or more."""
    done = {
        int(a["question_id"].split("-")[1])
        for a in attempts
        if a["question_id"].startswith(f"{GRILL_SOURCE}-")
        and a["mode"] == "drill"
        and a["kind"] == "answer"
        and a["hints"] == 0
        and (a["score"] or 0.0) >= COLD_SCORE
    }
    return Grill(sorted(n for n in done if 1 <= n <= GRILL_ITEMS))


def next_drill(manager: SessionManager, history: dict[str, History], now: datetime) -> list[DrillPick]:
    """The scheduler's most urgent questions (policy.plan_session), with why each is due."""
    bank = manager.services.bank
    ids = plan_session(list(bank), DRILL_SIZE, history, bank.concept_of, now, random.Random(0))
    picks = []
    for qid in ids:
        h, q = history.get(qid), bank.get(qid)
        if h is None or h.last_score is None:
            reason = "never graded"
        else:
            due = " · due for review" if h.due is not None and h.due <= now else ""
            reason = f"last {h.last_score:g}/5{due} (priority {priority(h, now):.1f})"
        picks.append(DrillPick(qid, q.topic, q.title, reason))
    return picks


def mastery(rows: list[QuestionRow]) -> dict[str, tuple[float, int]]:
    """Per topic, the mean of each question's latest score out of 5 (unanswered counts 0), weakest first."""
    latest = {r.question_id: r for r in rows}  # rows are in time order: the last one wins
    scores: dict[str, list[float]] = defaultdict(list)
    for r in latest.values():
        scores[r.topic].append((r.score or 0.0) / 5.0)
    table = {t: (sum(s) / len(s), len(s)) for t, s in scores.items()}
    return dict(sorted(table.items(), key=lambda kv: (kv[1][0], kv[0])))


def build_report(manager: SessionManager, session_id: str | None = None) -> Report:
    """The report of one session, or of all sessions when `session_id` is None."""
    progress = manager.services.progress
    records = sorted(progress.sessions(), key=lambda r: r.started_at)
    if session_id is not None:
        records = [r for r in records if r.id == session_id]
        if not records:
            raise BadInput(
                f"No session {session_id!r} in {progress.path}. List them with `interviewer report --all`."
            )
    rows: list[QuestionRow] = []
    speech: list[SpeechSample] = []
    misconceptions: list[StatedMisconception] = []
    for record in records:
        attempts, events = progress.attempts(record.id), _events(manager, record.id)
        rows += session_rows(manager, record, attempts, events)
        speech += speech_samples(record.id, events)
        for a in attempts:
            for m in (a["grade"] or {}).get("misconceptions", []):
                misconceptions.append(StatedMisconception(a["question_id"], m["text"], m.get("evidence", "")))
    rows.sort(key=lambda r: r.at)
    missed: dict[str, list[MissedPoint]] = defaultdict(list)
    for r in {r.question_id: r for r in rows}.values():  # each question as last left
        q = _question(manager, r.question_id)
        for point in r.missed:
            excerpt = excerpt_for(point, q.reference) if q else ""
            missed[r.topic].append(
                MissedPoint(r.question_id, r.question, point, excerpt, citation(q) if q else "")
            )
    if session_id is not None:
        r0 = records[0]
        title = f"Weakness report — session {r0.id} ({r0.started_at[:16].replace('T', ' ')}, {r0.mode})"
    else:
        title = f"Weakness report — all sessions ({len(records)})"
    now = manager.services.now()
    return Report(
        title=title,
        generated_at=now.isoformat(timespec="seconds"),
        sessions=records,
        rows=rows,
        mastery=mastery(rows),
        missed=dict(sorted(missed.items())),
        misconceptions=list({(m.question_id, m.text): m for m in misconceptions}.values()),
        speech=speech,
        grill=grill_score(progress.attempts()),
        next_drill=next_drill(manager, progress.history(), now),
    )
