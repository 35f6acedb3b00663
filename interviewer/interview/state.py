"""The interview graph's state, and the events it shows the candidate.

Everything stored in the state is plain JSON data (dicts, lists, strings,
numbers), so any checkpointer can save it and a session killed at any point
resumes from it. The shapes are TypedDicts; events are created as typed
dataclasses and stored as their `to_json()` dicts, in order, on `State.events`.

This module holds no logic beyond building and reading these values.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

Mode = Literal["drill", "interview"]
InputKind = Literal["answer", "audio", "skip", "hint", "reveal", "repeat", "end"]
Outcome = Literal["answered", "skipped", "revealed", "ended"]
COMMANDS: dict[str, InputKind] = {
    "/skip": "skip",
    "/hint": "hint",
    "/answer": "reveal",
    "/repeat": "repeat",
    "/end": "end",
}


class Options(TypedDict):
    """What the candidate asked for; fixed for the session."""

    topics: list[str]
    difficulty: str | None
    source: str | None
    questions: int
    mode: Mode
    backend: str  # "rubric" | an LLM backend name
    seed: int
    max_follow_ups: int  # per question (settings.max_follow_ups when the session started)


class UserInput(TypedDict, total=False):
    """One turn of the candidate, as the session sends it to the graph.

    {"kind": "answer", "text": "Warm up for 2k steps...", "at": "2026-11-30T16:05:50+00:00"}
    {"kind": "audio", "path": "/tmp/answer.wav", "at": ...}
    {"kind": "hint", "at": ...}
    """

    kind: InputKind
    text: str
    path: str
    at: str  # ISO time the session received it


class PointState(TypedDict):
    """A key point's running status in the question (a `KeyPointResult` as JSON)."""

    text: str
    core: bool
    status: str  # "covered" | "partial" | "missed"
    evidence: str
    confidence: float


class Attempt(TypedDict):
    """One row of the progress store's attempts table, built in the graph."""

    id: str  # "<session id>:<n>", n counting the session's attempts: re-recording is a no-op
    session_id: str
    question_id: str
    kind: str  # "answer" | "follow_up" | "skip" | "reveal"
    mode: str
    target_point: str | None  # the key point a follow-up asked about
    answer: str
    grade: dict[str, Any] | None  # Grade.to_json()
    score: float | None
    missed: list[str]
    hints: int
    asked_at: str
    answered_at: str
    think_s: float | None  # from the prompt to the answer
    grade_ms: float | None


class Turn(TypedDict):
    """The question being asked, with its running result."""

    question_id: str
    number: int  # 1-based position in the session
    asked_at: str  # when the current prompt (question or follow-up) was shown
    prompt: dict[str, Any]  # the current prompt's event, re-shown by /repeat and on resume
    points: list[PointState] | None  # None until the first answer is graded
    first_score: float | None  # the cold answer's score (drives the schedule)
    score: float | None  # the running score, follow-ups included
    misconceptions: list[dict[str, Any]]
    numeric: dict[str, Any] | None
    target: int | None  # index of the key point the pending follow-up asks about
    targeted: list[int]  # key points already followed up
    suggested: int | None  # the point the grader's `Grade.follow_up` names
    follow_ups: int
    hints: int
    hints_before_answer: int  # hints taken before the first answer (they cap the schedule's rating)
    prompt_hints: int  # hints taken since the current prompt was shown
    attempts: list[Attempt]
    outcome: Outcome | None
    # a grade of this question was held back because a follow-up probed what it missed:
    # the debrief comes when the question is done (absent in sessions saved before it existed)
    held: NotRequired[bool]


class QuestionResult(TypedDict):
    question_id: str
    topic: str
    score: float | None  # None: skipped or revealed before answering
    first_score: float | None
    missed: list[str]  # core key points still not covered
    outcome: Outcome
    hints: int
    follow_ups: int


@dataclass
class State:
    session_id: str = ""
    options: Options | None = None
    plan: list[str] = field(default_factory=list)  # question ids, in asking order
    index: int = 0  # position in `plan` of the current question
    turn: Turn | None = None
    pending: UserInput | None = None  # the candidate's latest input
    results: list[QuestionResult] = field(default_factory=list)
    attempt_count: int = 0
    ended: bool = False  # the candidate typed /end
    events: Annotated[list[dict[str, Any]], operator.add] = field(default_factory=list)


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class Event:
    """Something to show the candidate. `to_json()` is one line of `--json-log`."""

    type: ClassVar[str] = "event"
    session_id: str
    question_id: str | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass(frozen=True)
class QuestionEvent(Event):
    type: ClassVar[str] = "question"
    number: int = 0
    total: int = 0
    topic: str = ""
    difficulty: str = ""
    source: str = ""
    phrased_by: str = "template"  # "template" | "llm"
    repeat: bool = False


@dataclass(frozen=True)
class FollowUpEvent(Event):
    type: ClassVar[str] = "follow_up"
    point: str = ""  # the missed key point it asks about
    number: int = 0  # 1 for the first follow-up of this question
    sources: list[dict[str, str]] = field(default_factory=list)  # [{"citation", "text"}]
    phrased_by: str = "template"
    repeat: bool = False


@dataclass(frozen=True)
class AnswerEvent(Event):
    type: ClassVar[str] = "answer"
    audio: bool = False
    delivery: dict[str, Any] | None = None  # pace and fillers of a spoken answer


@dataclass(frozen=True)
class GradeEvent(Event):
    """`text` is the grader's feedback; `points` is [{"text", "core", "status", "evidence"}]."""

    type: ClassVar[str] = "grade"
    score: float = 0.0
    running_score: float = 0.0  # the question's score with follow-ups counted
    follow_up_point: str | None = None  # set when this grades a follow-up answer
    points: list[dict[str, Any]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    misconceptions: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    grader: str = ""
    latency_ms: float = 0.0
    # held: a follow-up comes next and probes what the answer missed, so only what it got
    # right is shown (an interviewer does not read out the answer before asking for it)
    held: bool = False
    # debrief: the question's closing grade, follow-ups counted, after a held grade
    debrief: bool = False


@dataclass(frozen=True)
class HintEvent(Event):
    type: ClassVar[str] = "hint"
    number: int = 0


@dataclass(frozen=True)
class RevealEvent(Event):
    """The model answer (`text`) with the source passages it comes from."""

    type: ClassVar[str] = "reveal"
    sources: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class SkipEvent(Event):
    type: ClassVar[str] = "skip"


@dataclass(frozen=True)
class NoticeEvent(Event):
    """Something the candidate should know: a fallback, bad audio, a smaller session."""

    type: ClassVar[str] = "notice"


@dataclass(frozen=True)
class TokenEvent(Event):
    """A piece of a question or follow-up as an LLM streams it (never stored)."""

    type: ClassVar[str] = "token"
    of: str = "question"  # "question" | "follow_up"


@dataclass(frozen=True)
class SummaryEvent(Event):
    """The weakness summary. `questions` is [{"question_id", "topic", "score", "missed", "outcome"}]."""

    type: ClassVar[str] = "summary"
    score: float = 0.0  # sum of the questions' running scores
    cold_score: float = 0.0  # sum of first-answer scores
    max_score: float = 0.0
    answered: int = 0
    planned: int = 0
    ended_early: bool = False
    questions: list[dict[str, Any]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    weak_topics: list[str] = field(default_factory=list)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        QuestionEvent,
        FollowUpEvent,
        AnswerEvent,
        GradeEvent,
        HintEvent,
        RevealEvent,
        SkipEvent,
        NoticeEvent,
        TokenEvent,
        SummaryEvent,
    )
}


def event_from_json(data: dict[str, Any]) -> Event:
    """The typed event back from its stored dict."""
    values = dict(data)
    cls = EVENT_TYPES[values.pop("type")]
    return cls(**values)


PROMPT_TYPES = ("question", "follow_up")


# ---------------------------------------------------------------- turn values

STATUS_RANK = {"missed": 0, "partial": 1, "covered": 2}


def new_turn(question_id: str, number: int) -> Turn:
    return {
        "question_id": question_id, "number": number, "asked_at": "", "prompt": {}, "points": None,
        "first_score": None, "score": None, "misconceptions": [], "numeric": None, "target": None,
        "targeted": [], "suggested": None, "follow_ups": 0, "hints": 0, "hints_before_answer": 0,
        "prompt_hints": 0, "attempts": [], "outcome": None,
    }  # fmt: skip


def merge_point(points: list[PointState], index: int, result: PointState) -> list[PointState]:
    """The running result after a follow-up graded point `index`: a point only ever improves.

    >>> old = [{"text": "a", "core": True, "status": "missed", "evidence": "", "confidence": 0.1}]
    >>> new = {"text": "a", "core": True, "status": "covered", "evidence": "A!", "confidence": 0.9}
    >>> merge_point(old, 0, new)[0]["status"]
    'covered'
    """
    old = points[index]
    merged = dict(old)
    if STATUS_RANK[result["status"]] > STATUS_RANK[old["status"]]:
        merged.update(status=result["status"], evidence=result["evidence"])
    merged["confidence"] = max(old["confidence"], result["confidence"])
    return [merged if i == index else p for i, p in enumerate(points)]  # type: ignore[misc]


def next_target(turn: Turn) -> int | None:
    """The key point the next follow-up asks about: the weakest open core point not yet asked.

    The first follow-up takes the grader's choice (`Grade.follow_up`) when it made one.
    """
    points = turn["points"] or []
    open_points = [i for i, p in enumerate(points)
                   if p["core"] and p["status"] != "covered" and i not in turn["targeted"]]  # fmt: skip
    if not open_points:
        return None
    if turn["suggested"] in open_points:
        return turn["suggested"]
    return min(open_points, key=lambda i: (points[i]["confidence"], i))


def seconds_between(start: str, end: str) -> float | None:
    """Seconds from one ISO time to another; None when either is missing."""
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)
    except ValueError:
        return None


def make_attempt(
    state: State,
    kind: str,
    answered_at: str,
    *,
    target_point: str | None = None,
    answer: str = "",
    grade: dict[str, Any] | None = None,
    score: float | None = None,
    missed: list[str] | None = None,
    grade_ms: float | None = None,
) -> Attempt:
    """The next attempt of the session (its id counts attempts, so a re-run node reuses it)."""
    assert state.turn is not None and state.options is not None
    turn = state.turn
    return {
        "id": f"{state.session_id}:{state.attempt_count + 1}", "session_id": state.session_id,
        "question_id": turn["question_id"], "kind": kind, "mode": state.options["mode"],
        "target_point": target_point, "answer": answer, "grade": grade, "score": score,
        "missed": missed or [], "hints": turn["hints"], "asked_at": turn["asked_at"],
        "answered_at": answered_at, "grade_ms": grade_ms,
        "think_s": seconds_between(turn["asked_at"], answered_at) if grade is not None else None,
    }  # fmt: skip
