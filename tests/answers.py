"""Answers the session tests give, built from a question's own rubric."""

from __future__ import annotations

from interviewer.corpus.schema import Question


def weak_answer(q: Question) -> str:
    """One optional point's text, so that a core point stays open for a follow-up. The last
    one: a first optional point can imply the core ones (004-19's "scale each micro-batch
    loss by 1/N" says gradient accumulation), and sessions draw their questions at random."""
    optional = [kp for kp in q.key_points if not kp.core]
    return (optional or q.key_points)[-1].text
