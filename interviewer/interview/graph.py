"""The interview as a LangGraph state graph.

    plan_session -> pick_question -> ask -> await_answer (interrupt: the candidate's turn)
    await_answer -> transcribe (audio) -> grade -> record -> follow_up -> await_answer
                                                        \\-> finish_question -> pick_question | summarize
    await_answer -> hint | repeat -> await_answer
    await_answer -> skip | reveal -> record -> finish_question
    await_answer -> finish_question (/end) -> summarize

Only `await_answer` interrupts, and it does nothing else: LangGraph re-runs an
interrupted node from its top on resume. Writes to the progress store happen
in `record`, `finish_question` and `summarize`, after the grade, and are
idempotent, so a node re-run after a crash records nothing twice.
Nodes get shared services (bank, grader, store, progress, LLM) from the
run-time context (`context.Services`); they never read globals.

This module does not parse the candidate's typing or print anything (session.py
and terminal.py do).
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any, Literal

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from interviewer.corpus.schema import Question, Rubric
from interviewer.errors import BackendUnavailable, BadAudio
from interviewer.grading import Grade
from interviewer.grading.calibration import load_calibration
from interviewer.grading.feedback import write_feedback
from interviewer.grading.grade import (
    READ_CLAIM_FLAG,
    KeyPointResult,
    MisconceptionResult,
    NumericCheck,
    aggregate,
)
from interviewer.interview import prompts
from interviewer.interview.context import Context, Services
from interviewer.interview.phrasing import (
    MAX_FOLLOW_UP_CHARS,
    Phrasing,
    challenge_line,
    follow_up_request,
    grounding,
    hint_text,
    phrase,
    question_request,
    reaction,
    summary_event,
    template_follow_up,
    template_question,
)
from interviewer.interview.policy import plan_session, schedule_score
from interviewer.interview.state import (
    COMMANDS,
    AnswerEvent,
    Attempt,
    FollowUpEvent,
    GradeEvent,
    HintEvent,
    NoticeEvent,
    Outcome,
    PointState,
    QuestionEvent,
    QuestionResult,
    RevealEvent,
    SkipEvent,
    State,
    TokenEvent,
    Turn,
    UserInput,
    make_attempt,
    merge_point,
    new_turn,
    next_target,
)
from interviewer.speech.transcription import question_terms

if TYPE_CHECKING:
    from interviewer.corpus.store import Hit

log = logging.getLogger(__name__)

Ctx = Runtime[Context]


def _services(runtime: Ctx) -> Services:
    return runtime.context.services


def _question(state: State, runtime: Ctx) -> Question:
    assert state.turn is not None  # graph invariant: nodes after pick_question have a turn
    return _services(runtime).bank.get(state.turn["question_id"])


def _opts(state: State) -> dict[str, Any]:
    assert state.options is not None
    return dict(state.options)


def _phrase(runtime: Ctx, backend: str, request: str, fallback: str, of: str, qid: str, sid: str,
            *, max_chars: int, secret: str | None = None, question: str = "") -> Phrasing:  # fmt: skip
    writer = get_stream_writer()

    def on_token(piece: str) -> None:
        writer(TokenEvent(sid, qid, piece, of=of).to_json())

    return phrase(_services(runtime), backend, request, fallback, max_chars=max_chars, secret=secret,
                  question=question, on_token=on_token)  # fmt: skip


def _sources(hits: list[Hit]) -> list[dict[str, str]]:
    return [{"citation": h.citation(), "text": h.text} for h in hits]


def _notices(phrasing: Phrasing, sid: str, qid: str) -> list[dict[str, Any]]:
    return [NoticeEvent(sid, qid, phrasing.notice).to_json()] if phrasing.notice else []


# ---------------------------------------------------------------- nodes


def plan(state: State, runtime: Ctx) -> dict[str, Any]:
    services, opts = _services(runtime), _opts(state)
    bank = services.bank
    candidates = bank.filter(opts["topics"] or None, opts["difficulty"], opts["source"])
    ids = plan_session(candidates, opts["questions"], services.progress.history(), bank.concept_of,
                       services.now(), random.Random(opts["seed"]), services.overlap.repeats)  # fmt: skip
    events = []
    if len(ids) < opts["questions"]:
        text = prompts.NOTICE_FEWER.format(found=len(ids))
        events.append(NoticeEvent(state.session_id, None, text).to_json())
    return {"plan": ids, "index": 0, "events": events}


def pick_question(state: State) -> dict[str, Any]:
    if state.ended or state.index >= len(state.plan):
        return {"turn": None}
    return {"turn": new_turn(state.plan[state.index], state.index + 1), "pending": None}


def ask(state: State, runtime: Ctx) -> dict[str, Any]:
    q, sid = _question(state, runtime), state.session_id
    assert state.turn is not None
    request, max_chars = question_request(q, state.turn["number"], len(state.plan))
    phrasing = _phrase(runtime, _opts(state)["backend"], request, template_question(q), "question", q.id, sid,
                       max_chars=max_chars)  # fmt: skip
    event = QuestionEvent(sid, q.id, phrasing.text, number=state.turn["number"], total=len(state.plan),
                          topic=q.topic, difficulty=q.difficulty, source=q.source,
                          phrased_by=phrasing.phrased_by)  # fmt: skip
    turn: Turn = {**state.turn, "prompt": event.to_json(), "asked_at": _services(runtime).now().isoformat()}
    return {"turn": turn, "events": [*_notices(phrasing, sid, q.id), event.to_json()]}


def await_answer(state: State) -> dict[str, Any]:
    """The candidate's turn. Nothing but the interrupt happens here (the node re-runs on resume)."""
    assert state.turn is not None
    value = interrupt({"session_id": state.session_id, "question_id": state.turn["question_id"],
                       "awaiting": state.turn["prompt"].get("type")})  # fmt: skip
    received: UserInput = {"kind": "answer", "text": value} if isinstance(value, str) else dict(value)  # type: ignore[assignment]
    if received.get("kind") not in (*COMMANDS.values(), "answer", "audio"):
        received = {"kind": "answer", "text": str(received.get("text", ""))}
    return {"pending": received, "ended": state.ended or received["kind"] == "end"}


def transcribe(state: State, runtime: Ctx) -> dict[str, Any]:
    q, sid, pending = _question(state, runtime), state.session_id, state.pending or {}
    try:
        heard = _services(runtime).speech.transcribe(pending.get("path", ""), question_terms(q))
    except (BadAudio, BackendUnavailable) as exc:
        log.info("recording for %s not transcribed", q.id, exc_info=True)
        notice = NoticeEvent(sid, q.id, prompts.NOTICE_BAD_AUDIO.format(reason=exc))
        return {"pending": None, "events": [notice.to_json()]}
    answer: UserInput = {**pending, "kind": "answer", "text": heard.text}
    event = AnswerEvent(sid, q.id, heard.text, audio=True, delivery=heard.delivery)
    return {"pending": answer, "events": [event.to_json()]}


def _running_score(points: list[PointState], turn: Turn) -> float:
    """The question's score with follow-ups counted, by the graders' shared aggregator.

    Follow-ups only add: it never falls below the first answer's score (whose whole-answer
    terms the points alone do not carry), and the first answer's flags still apply, so an
    answer that addressed the grader keeps its cap.
    """
    first = next((a["grade"] for a in turn["attempts"] if a["kind"] == "answer" and a["grade"]), None)
    score = aggregate(
        [KeyPointResult.model_validate(p) for p in points],
        [MisconceptionResult.model_validate(m) for m in turn["misconceptions"]],
        NumericCheck.model_validate(turn["numeric"]) if turn["numeric"] else None,
        load_calibration().aggregation,  # read once per process
        flags=(first or {}).get("flags", []),
    )
    return max(score, turn["first_score"] or 0.0)


def grade(state: State, runtime: Ctx) -> dict[str, Any]:
    services, q, sid, opts = _services(runtime), _question(state, runtime), state.session_id, _opts(state)
    turn, pending = state.turn, state.pending or {}
    assert turn is not None
    text = pending.get("text", "")
    grader = services.grader(opts["backend"])
    events = [] if pending.get("path") else [AnswerEvent(sid, q.id, text).to_json()]
    target = turn["target"]
    if target is None:
        g: Grade = grader.grade(q, text)
        points: list[PointState] = [p.model_dump() for p in g.key_points]  # type: ignore[misc]
        suggested = next((i for i, p in enumerate(points) if p["text"] == g.follow_up), None)
        turn = {**turn, "points": points, "first_score": g.score, "score": g.score, "suggested": suggested,
                "misconceptions": [m.model_dump() for m in g.misconceptions],
                "numeric": g.numeric.model_dump() if g.numeric else None}  # fmt: skip
        missed = [p.text for p in g.key_points if p.core and p.status != "covered"]
        point_text = None
    else:
        kp = q.key_points[target]
        g = grader.grade(q.model_copy(update={"rubric": Rubric(key_points=[kp])}), text)
        assert turn["points"] is not None
        points = merge_point(turn["points"], target, g.key_points[0].model_dump())  # type: ignore[arg-type]
        turn = {**turn, "points": points, "score": _running_score(points, turn), "target": None}
        missed = [kp.text] if g.key_points[0].status != "covered" else []
        point_text = kp.text
    answered_at = pending.get("at") or services.now().isoformat()
    kind = "answer" if point_text is None else "follow_up"
    attempt = make_attempt(state, kind, answered_at, target_point=point_text, answer=text, grade=g.to_json(),
                           score=g.score, missed=missed, grade_ms=g.latency_ms)  # fmt: skip
    turn = {**turn, "attempts": [*turn["attempts"], attempt]}
    shown = [p.model_dump(include={"text", "core", "status", "evidence"}) for p in g.key_points]
    if _follows_up(turn, opts):  # hold back what was missed: the follow-up asks for it
        turn = {**turn, "held": True}
        event = GradeEvent(sid, q.id, prompts.GRADE_HELD, score=g.score, running_score=turn["score"] or 0.0,
                           follow_up_point=point_text, points=[p for p in shown if p["status"] != "missed"],
                           flags=list(g.flags), grader=g.grader.grader, latency_ms=g.latency_ms,
                           held=True)  # fmt: skip
    else:
        event = GradeEvent(sid, q.id, g.feedback, score=g.score, running_score=turn["score"] or 0.0,
                           follow_up_point=point_text, points=shown, missed=missed,
                           misconceptions=[m.text for m in g.misconceptions], flags=list(g.flags),
                           grader=g.grader.grader, latency_ms=g.latency_ms)  # fmt: skip
    if g.grader.fallback:  # the LLM grader fell back to the embedded one: say so
        text = prompts.NOTICE_GRADER_FALLBACK.format(reason=g.grader.fallback[:160])
        events.append(NoticeEvent(sid, q.id, text).to_json())
    return {"turn": turn, "attempt_count": state.attempt_count + 1, "events": [*events, event.to_json()]}


def record(state: State, runtime: Ctx) -> dict[str, Any]:
    """Persist the question's attempts (idempotent: a re-run stores nothing twice)."""
    assert state.turn is not None
    for attempt in state.turn["attempts"]:
        _services(runtime).progress.record_attempt(attempt)
    return {}


def follow_up(state: State, runtime: Ctx) -> dict[str, Any]:
    """React to the answer in one sentence, then push back on a stated wrong claim (first
    follow-up only) or probe the weakest missed core point without stating it."""
    q, sid, turn = _question(state, runtime), state.session_id, state.turn
    assert turn is not None
    target = next_target(turn)
    assert target is not None  # route_after_record checked
    point = q.key_points[target].text
    hits = grounding(_services(runtime).store, point, q)
    answer = (state.pending or {}).get("text", "")
    number = turn["follow_ups"] + 1
    stated = turn["misconceptions"] if number == 1 else []
    line = challenge_line(q, stated[0]) if stated else template_follow_up(q, target, number)
    fallback = f"{reaction(turn['points'] or [], stated)} {line}" if number == 1 else line
    request = follow_up_request(q, answer, point, [h.text for h in hits], line)
    phrasing = _phrase(runtime, _opts(state)["backend"], request, fallback, "follow_up", q.id, sid,
                       max_chars=MAX_FOLLOW_UP_CHARS, secret=point, question=q.question)  # fmt: skip
    event = FollowUpEvent(sid, q.id, phrasing.text, point=point, number=number,
                          sources=_sources(hits), phrased_by=phrasing.phrased_by)  # fmt: skip
    turn = {**turn, "target": target, "targeted": [*turn["targeted"], target], "prompt_hints": 0,
            "follow_ups": number, "prompt": event.to_json(),
            "asked_at": _services(runtime).now().isoformat()}  # fmt: skip
    return {"turn": turn, "events": [*_notices(phrasing, sid, q.id), event.to_json()]}


def hint(state: State, runtime: Ctx) -> dict[str, Any]:
    q, turn = _question(state, runtime), state.turn
    assert turn is not None
    text = hint_text(q, turn["points"], turn["hints"], turn["targeted"])
    before = turn["hints_before_answer"] + (1 if turn["points"] is None else 0)
    turn = {**turn, "hints": turn["hints"] + 1, "prompt_hints": turn["prompt_hints"] + 1,
            "hints_before_answer": before}  # fmt: skip
    event = HintEvent(state.session_id, q.id, text, number=turn["hints"])
    return {"turn": turn, "events": [event.to_json()]}


def _closing_attempt(state: State, runtime: Ctx, kind: str) -> Attempt:
    """The attempt row of a skip or reveal: no answer, no grade."""
    assert state.turn is not None
    target = state.turn["target"]
    point = _question(state, runtime).key_points[target].text if target is not None else None
    answered_at = (state.pending or {}).get("at") or _services(runtime).now().isoformat()
    return make_attempt(state, kind, answered_at, target_point=point)


def skip(state: State, runtime: Ctx) -> dict[str, Any]:
    turn = state.turn
    assert turn is not None
    answered = turn["points"] is not None
    text = prompts.SKIPPED_FOLLOW_UP if answered else prompts.SKIPPED
    attempt = _closing_attempt(state, runtime, "skip")
    outcome: Outcome = "answered" if answered else "skipped"
    turn = {**turn, "outcome": outcome, "attempts": [*turn["attempts"], attempt]}
    event = SkipEvent(state.session_id, turn["question_id"], text)
    return {"turn": turn, "attempt_count": state.attempt_count + 1, "events": [event.to_json()]}


def reveal(state: State, runtime: Ctx) -> dict[str, Any]:
    q, turn = _question(state, runtime), state.turn
    assert turn is not None
    hits = grounding(_services(runtime).store, q.reference, q, without=q.reference)
    attempt = _closing_attempt(state, runtime, "reveal")
    outcome: Outcome = "answered" if turn["points"] is not None else "revealed"
    turn = {**turn, "outcome": outcome, "attempts": [*turn["attempts"], attempt]}
    event = RevealEvent(state.session_id, q.id, q.reference, sources=_sources(hits))
    return {"turn": turn, "attempt_count": state.attempt_count + 1, "events": [event.to_json()]}


def repeat(state: State) -> dict[str, Any]:
    assert state.turn is not None
    return {"events": [{**state.turn["prompt"], "repeat": True}]}


def finish_question(state: State, runtime: Ctx) -> dict[str, Any]:
    """Close the question: rate it on the schedule (once) and add it to the results."""
    services, turn = _services(runtime), state.turn
    assert turn is not None
    outcome = turn["outcome"] or ("answered" if turn["points"] is not None else "ended")
    updates: dict[str, Any] = {"turn": None, "index": state.index + 1, "pending": None}
    if outcome == "ended":  # ended before answering: neither rated nor counted
        return updates
    q = _question(state, runtime)
    score = schedule_score(turn["first_score"], turn["hints_before_answer"])
    services.progress.record_review(state.session_id, q.id, score, services.now())
    missed = [p["text"] for p in turn["points"] or [] if p["core"] and p["status"] != "covered"]
    if turn["points"] is None:
        missed = [kp.text for kp in q.key_points if kp.core]
    result: QuestionResult = {"question_id": q.id, "topic": q.topic, "score": turn["score"],
                              "first_score": turn["first_score"], "missed": missed, "outcome": outcome,
                              "hints": turn["hints"], "follow_ups": turn["follow_ups"]}  # fmt: skip
    updates["results"] = [*state.results, result]
    if turn.get("held") and turn["points"] is not None:
        updates["events"] = [_debrief(state.session_id, q, turn).to_json()]
    return updates


def _debrief(session_id: str, q: Question, turn: Turn) -> GradeEvent:
    """The question's closing grade after a held one: every point as it stands with the
    follow-ups counted, and the feedback written for that, in the shared words."""
    assert turn["points"] is not None
    points = [KeyPointResult.model_validate(p) for p in turn["points"]]
    stated = [MisconceptionResult.model_validate(m) for m in turn["misconceptions"]]
    numeric = NumericCheck.model_validate(turn["numeric"]) if turn["numeric"] else None
    first = next((a["grade"] for a in turn["attempts"] if a["kind"] == "answer" and a["grade"]), None) or {}
    flags = list(first.get("flags", []))
    score = turn["score"] or 0.0
    cap = load_calibration().aggregation.read_claim_cap  # a wrong claim read in the first answer holds
    held = cap if READ_CLAIM_FLAG in flags and stated and score >= cap else None
    text = write_feedback(points, stated, numeric, flags, reference=q.reference, claim_cap=held)
    shown = [p.model_dump(include={"text", "core", "status", "evidence"}) for p in points]
    missed = [p.text for p in points if p.core and p.status != "covered"]
    return GradeEvent(session_id, q.id, text, score=score, running_score=score, points=shown, missed=missed,
                      misconceptions=[m.text for m in stated], flags=flags,
                      grader=str(first.get("grader", {}).get("grader", "")), debrief=True)  # fmt: skip


def summarize(state: State, runtime: Ctx) -> dict[str, Any]:
    opts = _opts(state)
    event = summary_event(state.session_id, state.results, len(state.plan), opts["mode"], state.ended)
    _services(runtime).progress.finish_session(state.session_id, _services(runtime).now())
    return {"events": [event.to_json()]}


# ---------------------------------------------------------------- routing


def route_pick(state: State) -> Literal["ask", "summarize"]:
    return "ask" if state.turn is not None else "summarize"


InputRoute = Literal["transcribe", "grade", "hint", "reveal", "skip", "repeat", "finish_question"]
INPUT_ROUTES: dict[str, InputRoute] = {
    "answer": "grade", "audio": "transcribe", "end": "finish_question",
    "hint": "hint", "reveal": "reveal", "skip": "skip", "repeat": "repeat",
}  # fmt: skip


def route_input(state: State) -> InputRoute:
    return INPUT_ROUTES.get((state.pending or {}).get("kind", "answer"), "grade")


def route_transcribed(state: State) -> Literal["grade", "await_answer"]:
    return "grade" if state.pending else "await_answer"


def route_after_record(state: State) -> Literal["follow_up", "finish_question"]:
    """Follow up while a core point is open and the cap allows; drill mode never follows up."""
    assert state.turn is not None
    return "follow_up" if _follows_up(state.turn, _opts(state)) else "finish_question"


def _follows_up(turn: Turn, opts: dict[str, Any]) -> bool:
    """A core point is open, the question is not closed, and the mode and cap allow a follow-up."""
    if turn["outcome"] is not None or opts["mode"] == "drill" or turn["follow_ups"] >= opts["max_follow_ups"]:
        return False
    return next_target(turn) is not None


def route_after_finish(state: State) -> Literal["pick_question", "summarize"]:
    return "summarize" if state.ended else "pick_question"


def build_graph() -> StateGraph[State, Context, State, State]:
    """The uncompiled graph; compile it with a checkpointer (InMemorySaver in tests)."""
    builder = StateGraph(State, context_schema=Context)
    nodes = (plan, pick_question, ask, await_answer, transcribe, grade, record, follow_up, hint, skip,
             reveal, repeat, finish_question, summarize)  # fmt: skip
    for node in nodes:
        builder.add_node(node)  # type: ignore[call-overload]
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "pick_question")
    builder.add_conditional_edges("pick_question", route_pick)
    builder.add_edge("ask", "await_answer")
    builder.add_conditional_edges("await_answer", route_input)
    builder.add_conditional_edges("transcribe", route_transcribed)
    for name in ("grade", "skip", "reveal"):
        builder.add_edge(name, "record")
    builder.add_conditional_edges("record", route_after_record)
    for name in ("follow_up", "hint", "repeat"):
        builder.add_edge(name, "await_answer")
    builder.add_conditional_edges("finish_question", route_after_finish)
    builder.add_edge("summarize", END)
    return builder


def compile_graph(checkpointer: Any) -> CompiledStateGraph[State, Context, State, State]:
    return build_graph().compile(checkpointer=checkpointer)
