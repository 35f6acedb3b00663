"""What the interviewer says: questions, follow-ups and hints (templates, or an LLM
with the template as fallback), and the end-of-session summary.

Templates come from `prompts.py` and the rubric's key points; they never
state a missed point, only its first words (`stem`). An LLM reply is checked
(`junk_reason`) and replaced by the template when it is empty, too long, has
no question mark or gives the point away — and the caller gets a notice
saying so, so the fallback is never silent.

This module does not grade, retrieve passages or touch the graph state.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from interviewer.corpus.schema import Question
from interviewer.errors import InterviewerError
from interviewer.interview import prompts
from interviewer.interview.state import PointState, QuestionResult, SummaryEvent
from interviewer.llm import LLMBackend

if TYPE_CHECKING:
    from interviewer.corpus.store import Hit, Store
    from interviewer.interview.context import Services

log = logging.getLogger(__name__)

MAX_FOLLOW_UP_CHARS = 400


@dataclass(frozen=True)
class Phrasing:
    text: str
    phrased_by: str  # "template" | "llm"
    notice: str | None = None  # why the LLM's words were not used


def stem(text: str, share: float = 0.4, known: str = "") -> str:
    """The first words of a key point: enough to name it, not enough to give it away.

    At least two words stay hidden, and the stem stops before any number the
    question (`known`) does not already state; points of two words or fewer get no stem.

    >>> stem("Delayed scaling sets the scale from an amax history of previous steps")
    'Delayed scaling sets the scale'
    >>> stem("128 filters give 73,728 weights, plus 128 biases", known="to 128 output channels")
    '128 filters give'
    """
    words = text.split()
    if len(words) <= 2:
        return ""
    keep = max(1, min(len(words) - 2, math.ceil(len(words) * share)))
    given = set(re.findall(r"\d[\d,.]*", known))
    for i, word in enumerate(words[:keep]):
        if any(n.rstrip(",.") not in given for n in re.findall(r"\d[\d,.]*", word)):
            keep = i
            break
    cue = " ".join(words[:keep]).rstrip(",;:—-")
    # A stem of function words only ("this is") names nothing: better no stem at all.
    if not any(w.lower().strip(",.;:") not in _FUNCTION_WORDS for w in cue.split()):
        return ""
    return cue


_FUNCTION_WORDS = frozenset(
    "a an the this that these those it its is are was were be to of in on for and or but so as at by "
    "with from you your we they it's there here what which when how why".split()
)


def template_question(question: Question) -> str:
    return prompts.QUESTION.format(question=question.question)


def template_follow_up(point: str, question: Question, number: int = 1) -> str:
    """The rubric backend's follow-up: the missed point's first words, to be completed."""
    cue = stem(point, known=question.question)
    if not cue:
        return prompts.FOLLOW_UP_NO_STEM
    return (prompts.FOLLOW_UP if number == 1 else prompts.FOLLOW_UP_NEXT).format(stem=cue)


def hint_text(
    question: Question, points: list[PointState] | None, hints_given: int, target: int | None
) -> str:
    """The next hint: the stem of the next core point not yet covered, or more of the follow-up's point.

    `points` is the running result (None before the first answer); `target`
    the key point a pending follow-up asks about; `hints_given` counts this prompt's hints.
    """
    if target is not None:
        cue = stem(question.key_points[target].text, share=0.7, known=question.question)
        return prompts.HINT_FOLLOW_UP.format(stem=cue) if cue and hints_given == 0 else prompts.HINT_NONE
    open_points = [kp for i, kp in enumerate(question.key_points)
                   if kp.core and (points is None or points[i]["status"] != "covered")]  # fmt: skip
    if hints_given >= len(open_points):
        return prompts.HINT_NONE
    cue = stem(open_points[hints_given].text, known=question.question)
    if not cue:
        return prompts.HINT_NONE if hints_given else prompts.HINT_COUNT.format(n_core=len(open_points))
    if hints_given == 0:
        n_core = sum(kp.core for kp in question.key_points)
        return prompts.HINT_FIRST.format(n_core=n_core, stem=cue)
    return prompts.HINT_NEXT.format(stem=cue)


def _normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def junk_reason(text: str, max_chars: int, secret: str | None = None) -> str | None:
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
        failure = junk_reason(text, max_chars, secret)
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
    on_token: Callable[[str], None] | None = None,
) -> Phrasing:
    """The session backend's LLM wording, or the template (announced when an LLM was expected)."""
    try:
        llm = services.llm(backend)
    except InterviewerError as exc:
        log.warning("LLM phrasing failed on %s; using the template", backend, exc_info=True)
        notice = prompts.NOTICE_LLM_FALLBACK.format(backend=backend, reason=str(exc)[:160])
        return Phrasing(fallback, "template", notice)
    if llm is None:
        return Phrasing(fallback, "template")
    return phrase_with_llm(llm, request, fallback, max_chars=max_chars, secret=secret, on_token=on_token)


def grounding(store: Store, text: str, question: Question, *, without: str = "") -> list[Hit]:
    """Up to two source passages for `text`, the question's own first, minus its wording and `without`."""
    hits = store.passages_for(text, question.id, k=4)
    skip = {question.question.strip(), without.strip()}
    unique = {h.text: h for h in hits if h.text.strip() not in skip}
    return list(unique.values())[:2]


def question_request(question: Question, number: int, total: int) -> tuple[str, int]:
    """The LLM request for asking `question`, and the longest acceptable reply."""
    request = prompts.PHRASE_QUESTION.format(
        number=number, total=total, topic=question.topic, question=question.question
    )
    return request, max(400, 2 * len(question.question))


def follow_up_request(question: Question, answer: str, point: str, passages: list[str]) -> str:
    quoted = "\n\n".join(f"[{i}] {p[:800]}" for i, p in enumerate(passages, 1)) or "(none)"
    return prompts.PHRASE_FOLLOW_UP.format(
        question=question.question, answer=answer[:2000] or "(no answer)", point=point, passages=quoted
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
