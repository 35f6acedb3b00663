"""What every grader's `Grade` says besides its score: short feedback (what was good, what
is missing, what was wrong), the key point to follow up on, and the latency. Graders decide
credit; this module only words it."""

from __future__ import annotations

import time

from interviewer.grading.grade import (
    ATTEMPT_FLAG,
    INJECTION_FLAG,
    Grade,
    KeyPointResult,
    MisconceptionResult,
    NumericCheck,
    Provenance,
)


def build_grade(
    score: float,
    results: list[KeyPointResult],
    stated: list[MisconceptionResult],
    numeric: NumericCheck | None,
    flags: list[str],
    provenance: Provenance,
    t0: float,
    injection_cap: float = 5.0,
) -> Grade:
    """The Grade with its feedback, follow-up point and latency (shared by every grader)."""
    return Grade(
        score=score,
        key_points=results,
        misconceptions=stated,
        numeric=numeric,
        flags=flags,
        feedback=write_feedback(results, stated, numeric, flags, injection_cap),
        follow_up=pick_follow_up(results),
        grader=provenance,
        latency_ms=round((time.perf_counter() - t0) * 1000, 2),
    )


def pick_follow_up(results: list[KeyPointResult]) -> str | None:
    """The weakest core point not covered (lowest credit); None when all core points are covered."""
    open_points = [r for r in results if r.core and r.status != "covered"]
    if not open_points:
        return None
    return min(open_points, key=lambda r: r.confidence).text


def write_feedback(
    results: list[KeyPointResult],
    stated: list[MisconceptionResult],
    numeric: NumericCheck | None,
    flags: list[str],
    injection_cap: float = 5.0,
) -> str:
    """Two or three plain sentences: what was good, what is missing."""
    if "empty" in flags or "no-answer" in flags:
        return "No answer to grade. Try saying what you do know — partial answers earn partial credit."
    if "not-english" in flags:
        return "The answer is not in English; this interview is graded in English. Please answer in English."
    if "gibberish" in flags:
        return "That does not read as an answer. Answer in plain sentences."
    if "off-topic" in flags:
        return "The answer does not address this question. Re-read it and answer what it asks."
    parts = []
    covered = [r.text for r in results if r.status == "covered"]
    missing = [r.text for r in results if r.core and r.status == "missed"]
    partial = [r.text for r in results if r.status == "partial"]
    if covered:
        parts.append("Good: " + "; ".join(covered[:3]) + ".")
    if partial:
        parts.append("Only touched on: " + "; ".join(partial[:2]) + ".")
    if missing:
        parts.append("Missing: " + "; ".join(missing[:3]) + ".")
    if stated:
        parts.append("Wrong: " + "; ".join(m.text for m in stated) + ".")
    if numeric is not None and numeric.verdict != "correct":
        unit = f" {numeric.unit}" if numeric.unit else ""
        said = f"you said {numeric.found_text}" if numeric.found_text else "no number given"
        parts.append(f"The number should be {numeric.target:g}{unit} ({said}).")
    if ATTEMPT_FLAG in flags:
        parts.append(
            "The answer is on the topic but states no key point clearly enough to earn credit;"
            " it scores the minimum for a relevant attempt."
        )
    if INJECTION_FLAG in flags:
        capped = (
            f"; an answer that contains them scores at most {injection_cap:g}" if injection_cap < 5 else ""
        )
        parts.append(f"Instructions addressed to the grader were ignored{capped}.")
    return " ".join(parts) or "Complete answer."
