"""How the web app shows a session: chat messages, the grade panel, speech figures, status.

Pure functions from the session's events (state.py) to Markdown, so they are
tested without a browser:

    >>> q = QuestionEvent("s1", "002-41", "BF16 needs?", number=1, total=2, topic="precision")
    >>> chat_messages([q])[0]["content"].splitlines()[0]
    '**Question 1 of 2** · 002-41 · precision'

This module imports no Gradio and drives no session (app.py does both).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from interviewer.interview.session import SessionView
from interviewer.interview.state import AnswerEvent, Event, GradeEvent, QuestionEvent

Message = dict[str, str]  # {"role": "user" | "assistant", "content": Markdown}

MARKS = {"covered": "✓", "partial": "◐", "missed": "✗"}  # in common fonts (no emoji font needed)
STATUS_HEADINGS = {"covered": "Covered", "partial": "Partly covered", "missed": "Missed"}
QUOTE_CHARS = 240


def _quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """A one-line quotation of the candidate's words, cut at `limit` characters."""
    flat = " ".join(text.split())
    return f"“{flat[:limit]}…”" if len(flat) > limit else f"“{flat}”"


def _sources(sources: Sequence[dict[str, str]], limit: int = 400) -> list[str]:
    lines = []
    for i, s in enumerate(sources, 1):
        excerpt = " ".join(s.get("text", "").split())
        excerpt = excerpt[:limit] + ("…" if len(excerpt) > limit else "")
        lines.append(f"{i}. *{s.get('citation', '')}* — {excerpt}")
    return lines


def speech_figures(delivery: dict[str, Any] | None) -> str:
    """One line of a spoken answer's figures (Transcript.to_json() without the text).

    >>> speech_figures({"duration_s": 12.5, "words_per_minute": 148.0, "fillers_per_minute": 2.4,
    ...                 "filler_counts": {"um": 1}, "long_pauses": [[7.2, 2.4]]})
    '12.5 s · 148 words/min · 2.4 fillers/min (um ×1) · 1 long pause (2.4 s at 0:07)'
    """
    if not delivery:
        return ""
    parts = []
    if "duration_s" in delivery:
        parts.append(f"{delivery['duration_s']:.1f} s")
    parts.append(f"{delivery.get('words_per_minute', 0):.0f} words/min")
    fillers = ", ".join(f"{k} ×{n}" for k, n in (delivery.get("filler_counts") or {}).items())
    parts.append(
        f"{delivery.get('fillers_per_minute', 0):.1f} fillers/min" + (f" ({fillers})" if fillers else "")
    )
    pauses = delivery.get("long_pauses") or []
    if pauses:
        where = ", ".join(f"{gap:.1f} s at {int(start // 60)}:{int(start % 60):02d}" for start, gap in pauses)
        parts.append(f"{len(pauses)} long pause{'s' if len(pauses) > 1 else ''} ({where})")
    else:
        parts.append("no long pauses")
    return " · ".join(parts)


def event_message(event: Event) -> Message | None:
    """The chat bubble of one event; None for events the chat does not show (tokens)."""
    e = event.to_json()
    kind = event.type
    if kind == "question":
        where = " · ".join(x for x in (e["question_id"], e["topic"], e["difficulty"]) if x)
        again = " (repeated)" if e["repeat"] else ""
        return {
            "role": "assistant",
            "content": f"**Question {e['number']} of {e['total']}**{again} · {where}\n\n{e['text']}",
        }
    if kind == "follow_up":
        cited = "; ".join(dict.fromkeys(s["citation"] for s in e["sources"]))
        grounded = f"\n\n<sub>grounded in {cited}</sub>" if cited else ""
        return {"role": "assistant", "content": f"{e['text']}{grounded}"}
    if kind == "answer":
        spoken = f"*Spoken answer — {speech_figures(e['delivery'])}*\n\n" if e["audio"] else ""
        return {"role": "user", "content": spoken + (e["text"] or "*(no words)*")}
    if kind == "grade":
        covered = sum(p["status"] == "covered" for p in e["points"])
        if e.get("held"):  # a follow-up comes next: what was missed waits for the debrief
            return {
                "role": "assistant",
                "content": f"Score **{e['score']:g}/5** · {covered} key points covered so far. {e['text']}",
            }
        running = f" — question now **{e['running_score']:g}/5**" if e["follow_up_point"] else ""
        lead = "Debrief: this question scores" if e.get("debrief") else "Score"
        return {
            "role": "assistant",
            "content": f"{lead} **{e['score']:g}/5**{running} · {covered} of {len(e['points'])} "
            f"key points covered. {e['text']}",
        }
    if kind == "hint":
        return {"role": "assistant", "content": e["text"]}
    if kind == "reveal":
        lines = ["**Model answer**", "", e["text"], "", "**Sources**", *_sources(e["sources"])]
        return {"role": "assistant", "content": "\n".join(lines)}
    if kind == "notice":
        return {"role": "assistant", "content": f"*Note: {e['text']}*"}
    if kind == "summary":
        note = "*The weakness report is in the Report tab.*"
        return {"role": "assistant", "content": f"{summary_markdown(e['text'])}\n\n{note}"}
    if kind == "skip":
        return {"role": "assistant", "content": e["text"]}
    return None


def summary_markdown(text: str) -> str:
    """The summary's indented lines as one Markdown list per block.

    >>> print(summary_markdown("Missed:\\n  - warm up [002-07]\\n  002-07 (learning-rate): 1/5\\nWeakest: lr."))
    Missed:
    - warm up [002-07]
    - 002-07 (learning-rate): 1/5
    <BLANKLINE>
    Weakest: lr.
    """
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("  "):
            out.append(f"- {line.strip().removeprefix('- ')}")
        else:
            if out and out[-1].startswith("- "):
                out.append("")  # end the list
            out.append(line)
    return "\n".join(out)


def chat_messages(events: Iterable[Event], streaming: str = "") -> list[Message]:
    """The whole conversation; `streaming` is a prompt an LLM is still writing."""
    messages = [m for m in (event_message(e) for e in events) if m is not None]
    if streaming:
        messages.append({"role": "assistant", "content": streaming + " ▌"})
    return messages


def grade_panel(events: Sequence[Event]) -> str:
    """The latest grade in full: score, key points with the evidence quoted, misconceptions,
    feedback, and the speech figures when the answer was spoken."""
    at = next((i for i in range(len(events) - 1, -1, -1) if isinstance(events[i], GradeEvent)), None)
    if at is None:
        return (
            "*Your grade appears here after each answer: the key points you covered (with your words "
            "quoted), the ones you missed, any misconception, and feedback.*"
        )
    grade = events[at]
    assert isinstance(grade, GradeEvent)
    answer = next((e for e in reversed(events[:at]) if isinstance(e, AnswerEvent)), None)
    question = next((e for e in reversed(events[:at]) if isinstance(e, QuestionEvent)), None)
    title = f"Question {question.number} · " if question else ""
    what = "follow-up" if grade.follow_up_point else "answer"
    lines = [f"### {title}{what} scored {grade.score:g}/5"]
    if grade.debrief:
        lines = [f"### {title}debrief: {grade.score:g}/5 with the follow-ups counted"]
    elif grade.held:
        lines.append("What the answer missed is shown in the debrief, once the follow-ups are done.")
    if grade.follow_up_point:
        lines.append(f"The question now stands at **{grade.running_score:g}/5** with follow-ups.")
    for status in ("covered", "partial", "missed"):
        points = [p for p in grade.points if p["status"] == status]
        if not points:
            continue
        lines += ["", f"**{STATUS_HEADINGS[status]}**"]
        for p in points:
            optional = " *(optional)*" if not p["core"] else ""
            quote = f" — {_quote(p['evidence'])}" if p.get("evidence") else ""
            lines.append(f"- {MARKS[status]} {p['text']}{optional}{quote}")
    if grade.misconceptions:
        lines += ["", "**Misconceptions**", *(f"- ⚠ {m}" for m in grade.misconceptions)]
    if grade.text:
        lines += ["", f"**Feedback.** {grade.text}"]
    if answer is not None and answer.audio:
        lines += ["", f"**Speech.** {speech_figures(answer.delivery)}"]
    flags = f" · flags: {', '.join(grade.flags)}" if grade.flags else ""
    lines += ["", f"<sub>graded by {grade.grader} in {grade.latency_ms:.0f} ms{flags}</sub>"]
    return "\n".join(lines)


def status_line(view: SessionView | None) -> str:
    if view is None:
        return "No session yet. Choose the options and press **Start**."
    where = f"Session `{view.session_id}` · {view.options.get('mode', '')} · "
    if view.finished:
        return where + "finished. Start a new session, or read the report."
    if view.awaiting == "follow_up":
        return where + f"question {view.number} of {view.total} · answer the follow-up"
    if view.awaiting == "question":
        return where + f"question {view.number} of {view.total} · your answer"
    return where + "working…"


def draft_figures(delivery: dict[str, Any]) -> str:
    """The figures shown under a transcript the candidate is still editing."""
    return f"**Speech:** {speech_figures(delivery)}. Edit the transcript if a word is wrong, then send it."
