"""What the interviewer says: questions, follow-ups and hints (templates, or an LLM
with the template as fallback), the end-of-session summary, and the line a voice
interview says aloud after each turn (`spoken_line`).

Templates come from `prompts.py` and the rubric's key points; they never
state a missed point, only its first words (`stem`). An LLM reply is checked
(`junk_reason`) and replaced by the template when it is empty, too long, has
no question mark or gives the point away — and the caller gets a notice
saying so, so the fallback is never silent.

This module does not grade, retrieve passages or touch the graph state.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from interviewer.corpus.schema import Question
from interviewer.errors import InterviewerError
from interviewer.grading.text import IDF, content_stems
from interviewer.interview import prompts
from interviewer.interview.state import Event, PointState, QuestionResult, SummaryEvent
from interviewer.llm import LLMBackend

if TYPE_CHECKING:
    from interviewer.corpus.store import Hit, Store
    from interviewer.interview.context import Services

log = logging.getLogger(__name__)

MAX_FOLLOW_UP_CHARS = 400
# The most of a key point a line may say: the IDF-weighted share of its content words, its
# question's words left out (`leak_score`). The script is held to it (tests/test_script.py),
# and so is an LLM's wording of a follow-up.
LEAK_BOUND = 0.25


def leak_score(idf: IDF, secret: str, line: str, question: str) -> float:
    """How much of `secret` the `line` says (0-1; the words of `question` do not count)."""
    return idf.recall(secret, set(content_stems(line)), set(content_stems(question)))


@dataclass(frozen=True)
class Phrasing:
    text: str
    phrased_by: str  # "template" | "llm"
    notice: str | None = None  # why the LLM's words were not used


def template_question(question: Question) -> str:
    """The question as the interviewer says it: the script's `ask`, else its own words."""
    return question.ask or prompts.QUESTION.format(question=question.question)


def reaction(points: list[PointState], stated: list[dict[str, str]]) -> str:
    """One short sentence on the answer before a follow-up: the first point it covered,
    or a pause when it stated a wrong claim (the challenge follows).

    >>> reaction([{"text": "a bad batch of data", "core": True, "status": "covered"}], [])
    "You're right about one thing: a bad batch of data."
    """
    if stated:
        return prompts.REACT_WRONG
    covered = [p["text"] for p in points if p["status"] == "covered"]
    if not covered:
        return prompts.REACT_NOTHING
    point = covered[0].rstrip(".")
    return prompts.REACT_COVERED.format(point=point[0].lower() + point[1:] if point[1:2].islower() else point)


def challenge_line(question: Question, stated: dict[str, str]) -> str:
    """The push-back for one stated wrong claim: its scripted `challenge`, else a question
    about the candidate's own sentence."""
    for m in question.rubric.misconceptions:
        if m.text == stated.get("text") and m.challenge:
            return m.challenge
    quote = " ".join((stated.get("evidence") or "").split()[:25]).rstrip(".,;")
    return prompts.CHALLENGE.format(quote=quote) if quote else prompts.FOLLOW_UP_OPEN


def template_follow_up(question: Question, target: int, number: int = 1) -> str:
    """The probe for the key point `target` (never its words); open questions without a script."""
    probe = question.key_points[target].probe
    if probe:
        return probe
    return prompts.FOLLOW_UP_OPEN if number == 1 else prompts.FOLLOW_UP_OPEN_NEXT


def hint_text(question: Question, points: list[PointState] | None, given: int, asked: list[int]) -> str:
    """The next hint on the question's ladder: its scripted `hints`, then the probes of the
    open core points not yet asked (`asked`), then none. `given` counts hints so far.
    A question without a script gets the number of core points, then an open nudge."""
    open_probes = [
        kp.probe
        for i, kp in enumerate(question.key_points)
        if kp.core and kp.probe and i not in asked and (points is None or points[i]["status"] != "covered")
    ]
    if question.hints:
        ladder = [*question.hints, *open_probes]
    else:
        ladder = [
            prompts.HINT_COUNT.format(n_core=sum(kp.core for kp in question.key_points)),
            prompts.HINT_OPEN,
        ]
    return ladder[given] if given < len(ladder) else prompts.HINT_NONE


def _normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def junk_reason(
    text: str, max_chars: int, secret: str | None = None, leak: Callable[[str], float] | None = None
) -> str | None:
    """Why an LLM's wording cannot be asked, or None when it can.

    >>> junk_reason("Why warm up?", 100), junk_reason("", 100), junk_reason("Warm up.", 100)
    (None, 'empty reply', 'no question mark')
    """
    if not text.strip():
        return "empty reply"
    if len(text) > max_chars:
        return f"too long: {len(text)} characters"
    if "?" not in text:
        return "no question mark"
    if secret and len(secret.split()) >= 3 and _normal(secret) in _normal(text):
        return "it states the missed point"
    if leak is not None and (score := leak(text)) > LEAK_BOUND:
        return f"it gives the missed point away (leak {score:.2f} > {LEAK_BOUND})"
    return None


def _clean(reply: str) -> str:
    text = reply.strip()
    text = re.sub(r"^(?:interviewer|assistant)\s*:\s*", "", text, flags=re.I)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'“”":
        text = text[1:-1].strip()
    return text.strip("“”").strip()


def phrase_with_llm(
    backend: LLMBackend,
    request: str,
    fallback: str,
    *,
    max_chars: int,
    secret: str | None = None,
    leak: Callable[[str], float] | None = None,
    on_token: Callable[[str], None] | None = None,
) -> Phrasing:
    """Ask the LLM to word something; the template `fallback` (announced) when that fails."""
    messages = [
        {"role": "system", "content": prompts.INTERVIEWER_SYSTEM},
        {"role": "user", "content": request},
    ]
    max_tokens = max(64, max_chars // 3)
    try:
        if backend.can_stream and on_token is not None:
            pieces = []
            for piece in backend.stream(messages, max_tokens=max_tokens):
                pieces.append(piece)
                on_token(piece)
            reply = "".join(pieces)
        else:
            reply = backend.complete(messages, max_tokens=max_tokens)
    except (InterviewerError, OSError, ValueError, TimeoutError) as exc:
        log.warning("the LLM's line failed; the template line is used", exc_info=True)
        failure: str | None = str(exc).split(". ")[0][:160] or exc.__class__.__name__
    else:
        text = _clean(reply)
        failure = junk_reason(text, max_chars, secret, leak)
        if failure is None:
            return Phrasing(text, "llm")
    notice = prompts.NOTICE_LLM_FALLBACK.format(backend=backend.name, reason=failure)
    return Phrasing(fallback, "template", notice)


def phrase(
    services: Services,
    backend: str,
    request: str,
    fallback: str,
    *,
    max_chars: int,
    secret: str | None = None,
    question: str = "",
    on_token: Callable[[str], None] | None = None,
) -> Phrasing:
    """The session backend's LLM wording, or the template (announced when an LLM was expected).
    With a `secret`, a reply whose leak score against it (`question`'s words aside) passes
    LEAK_BOUND is not used."""
    try:
        llm = services.llm(backend)
    except InterviewerError as exc:
        log.warning("LLM phrasing failed on %s; using the template", backend, exc_info=True)
        notice = prompts.NOTICE_LLM_FALLBACK.format(backend=backend, reason=str(exc)[:160])
        return Phrasing(fallback, "template", notice)
    if llm is None:
        return Phrasing(fallback, "template")
    idf = services.overlap.idf

    def leak(text: str) -> float:
        return leak_score(idf, secret or "", text, question)

    return phrase_with_llm(
        llm,
        request,
        fallback,
        max_chars=max_chars,
        secret=secret,
        leak=leak if secret else None,
        on_token=on_token,
    )


def grounding(store: Store, text: str, question: Question, *, without: str = "") -> list[Hit]:
    """Up to two source passages for `text`, the question's own first, minus its wording and `without`."""
    hits = store.passages_for(text, question.id, k=4)
    skip = {question.question.strip(), without.strip()}
    unique = {h.text: h for h in hits if h.text.strip() not in skip}
    return list(unique.values())[:2]


def question_request(question: Question, number: int, total: int) -> tuple[str, int]:
    """The LLM request for asking `question`, and the longest acceptable reply."""
    said = question.ask or question.question  # the script's wording is the anchor
    request = prompts.PHRASE_QUESTION.format(number=number, total=total, topic=question.topic, question=said)
    return request, max(400, 2 * len(said))


def follow_up_request(question: Question, answer: str, point: str, passages: list[str], line: str) -> str:
    """The LLM request for a follow-up, anchored on the script's `line` (probe or challenge)."""
    quoted = "\n\n".join(f"[{i}] {p[:800]}" for i, p in enumerate(passages, 1)) or "(none)"
    return prompts.PHRASE_FOLLOW_UP.format(
        question=question.title,
        answer=answer[:2000] or "(no answer)",
        point=point,
        passages=quoted,
        line=line,
    )


def summary_event(
    session_id: str, results: list[QuestionResult], planned: int, mode: str, ended: bool
) -> SummaryEvent:
    """The end-of-session summary: scores, every missed core point, the weakest topics."""
    answered = [r for r in results if r["first_score"] is not None]
    max_score = 5.0 * len(results)
    score = sum(r["score"] or 0.0 for r in results)
    cold = sum(r["first_score"] or 0.0 for r in results)
    by_topic: dict[str, list[float]] = {}
    for r in results:
        by_topic.setdefault(r["topic"], []).append(r["score"] or 0.0)
    averages = {t: sum(s) / len(s) for t, s in by_topic.items()}
    weak = sorted((t for t, avg in averages.items() if avg < 3.0), key=lambda t: (averages[t], t))
    lines = [prompts.SUMMARY_HEAD.format(answered=len(answered), planned=planned)]
    if results and mode == "drill":
        target = round(prompts.DRILL_TARGET * max_score)
        lines.append(prompts.SUMMARY_DRILL.format(cold=cold, max_score=max_score, target=target))
    elif results:
        lines.append(prompts.SUMMARY_SCORE.format(score=score, cold=cold, max_score=max_score))
    for r in results:
        shown = f"{r['score']:g}/5" if r["score"] is not None else "no answer"
        lines.append(prompts.SUMMARY_QUESTION.format(question_id=r["question_id"], topic=r["topic"],
                                                     score=shown, outcome=r["outcome"]))  # fmt: skip
    missed = [(point, r["question_id"]) for r in results for point in r["missed"]]
    if missed:
        lines.append(prompts.SUMMARY_MISSED_HEAD)
        lines += [prompts.SUMMARY_MISSED.format(point=p, question_id=qid) for p, qid in missed]
    elif results:
        lines.append(prompts.SUMMARY_ALL_COVERED)
    if weak:
        lines.append(prompts.SUMMARY_WEAK_TOPICS.format(topics=", ".join(weak)))
    return SummaryEvent(
        session_id, None, "\n".join(lines), score=score, cold_score=cold, max_score=max_score,
        answered=len(answered), planned=planned, ended_early=ended,
        questions=[{k: r[k] for k in ("question_id", "topic", "score", "first_score", "missed", "outcome")}  # type: ignore[literal-required]
                   for r in results],
        missed=[p for p, _ in missed], weak_topics=weak,
    )  # fmt: skip


# What the interviewer says aloud after a turn: the reaction, then the next question or follow-up.
SPOKEN_TYPES = ("grade", "question", "follow_up", "hint", "skip")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.S)
# A long first sentence is cut at a clause (after a comma, semicolon, colon or dash) so that
# the first part, synthesized while the candidate waits, stays short: about 0.1 s of Piper
# for 60 characters, 0.7 s for 300.
FIRST_PART_CHARS = 90
# Where to cut, best first: after a clause's punctuation, before a conjunction, at a space.
_BREAKS = (
    re.compile(r"[,;:]\s|\s[—–-]\s"),
    re.compile(r"\s(?=(?:and|but|so|because|which|while|whereas|where|when|since|or)\s)"),
    re.compile(r"\s"),
)
MIN_CLAUSE_CHARS = 20


def spoken_line(events: Sequence[Event]) -> str:
    """The interviewer's words since the candidate last spoke, as one line to say: the first
    sentence of a grade's reaction (the score and the points are on screen), then the next
    question, follow-up, hint or skip notice in full.

    >>> from interviewer.interview.state import AnswerEvent, FollowUpEvent, GradeEvent
    >>> spoken_line([
    ...     AnswerEvent("s", "002-07", "warmup keeps early steps small"),
    ...     GradeEvent("s", "002-07", "Good start. You covered the updates."),
    ...     FollowUpEvent("s", "002-07", "And what state is the optimizer missing at step one?"),
    ... ])
    'Good start. And what state is the optimizer missing at step one?'

    """
    since = [e for e in events if e.type in SPOKEN_TYPES or e.type == "answer"]
    last_answer = max((i for i, e in enumerate(since) if e.type == "answer"), default=-1)
    said = []
    for event in since[last_answer + 1 :]:
        text = str(event.to_json().get("text") or "").strip()
        if not text:
            continue
        if event.type == "grade":
            first = _FIRST_SENTENCE.match(text)
            text = first.group(1) if first else text
        said.append(text)
    return " ".join(said)


def spoken_parts(line: str) -> list[str]:
    """The line in the order it is synthesized and streamed: its first sentence alone (it
    starts playing while the rest is made), then the rest.

    >>> spoken_parts("Good start. And what state is the optimizer missing? Take your time.")
    ['Good start.', 'And what state is the optimizer missing? Take your time.']
    >>> spoken_parts("Why warm up?")
    ['Why warm up?']

    A long first sentence is cut within `FIRST_PART_CHARS`: at its last clause break, else
    before a conjunction, else at a space:

    >>> spoken_parts("Right, and when the loss spikes mid-run after weeks of smooth training, "
    ...              "what do you check first and what do you do about it?")  # doctest: +NORMALIZE_WHITESPACE
    ['Right, and when the loss spikes mid-run after weeks of smooth training,',
     'what do you check first and what do you do about it?']
    >>> spoken_parts("What was missing: the optimizer states and the gradients and the parameters are "
    ...              "sharded across the data-parallel ranks at stage three.")[0]
    'What was missing: the optimizer states and the gradients'
    """
    line = line.strip()
    first = _FIRST_SENTENCE.match(line)
    head = first.group(1) if first else line
    if len(head) > FIRST_PART_CHARS:
        for kind in _BREAKS:
            breaks = [
                b.end() for b in kind.finditer(head, 0, FIRST_PART_CHARS) if b.end() >= MIN_CLAUSE_CHARS
            ]
            if breaks:
                head = head[: breaks[-1]].strip()
                break
    rest = line[len(head) :].strip()
    if not rest:
        return [line] if line else []
    return [head, rest]
