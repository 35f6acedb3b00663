"""The `Grade` every grader returns, and the one aggregator that scores it.

Graders only decide per-key-point credit, misconceptions and the numeric
verdict; `aggregate` turns those into the 0-5 score (half points) the same
way for every grader, so an LLM's free-form number is never used.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel, Field

INJECTION_FLAG = "injection-ignored"  # the answer addressed the grader; that part was not graded
ATTEMPT_FLAG = "relevant-attempt"  # no key point earned credit; the floor for an answer on the topic
# a text reading (word order, covariation, a swapped term or role, a rejected claim) read a wrong
# claim in the answer's own words, not the similarity detector's guess: capped at `read_claim_cap`
READ_CLAIM_FLAG = "wrong-claim-read"
Status = Literal["covered", "partial", "missed"]
NumericVerdict = Literal["correct", "incorrect", "missing"]


class KeyPointResult(BaseModel):
    text: str
    core: bool
    status: Status
    evidence: str = ""  # the span of the answer that covers it, quoted verbatim
    confidence: float = 0.0  # the grader's credit in [0, 1] before thresholding


class MisconceptionResult(BaseModel):
    text: str
    evidence: str  # the answer's sentence that states it
    correction: str = ""  # the right claim, when the rubric holds it (a twin, or the point contradicted)


class NumericCheck(BaseModel):
    target: float
    unit: str
    tolerance: float
    found: float | None  # closest value the answer gave, in the target's unit
    found_text: str = ""  # as the answer wrote or said it
    verdict: NumericVerdict
    # the number found is one the question itself gives ("from 256 to 1,024"): restated, not answered
    restated: bool = False


class Provenance(BaseModel):
    grader: str  # "rubric" | "llm"
    version: str
    model: str | None = None
    prompt_hash: str | None = None
    fallback: str | None = None  # why an LLM grade fell back to the embedded grader


class Grade(BaseModel):
    score: float = Field(ge=0, le=5)
    key_points: list[KeyPointResult]
    misconceptions: list[MisconceptionResult] = Field(default_factory=list)
    numeric: NumericCheck | None = None
    flags: list[str] = Field(default_factory=list)  # "empty", "off-topic", "injection", ...
    feedback: str = ""
    follow_up: str | None = None  # the weakest missed core key point's text
    grader: Provenance
    latency_ms: float = 0.0

    @property
    def missed(self) -> list[KeyPointResult]:
        return [k for k in self.key_points if k.status != "covered"]

    def to_json(self) -> dict[str, object]:
        return self.model_dump(mode="json")


class AggregationParams(BaseModel):
    """Constants of the aggregator, fitted on the calibration split (see evals/)."""

    partial_credit: float = 0.5
    optional_weight: float = 0.5
    curve: float = 1.0  # score = 5 * coverage ** curve
    misconception_penalty: float = 1.5
    max_penalty: float = 3.0
    wrong_number_cap: float = 2.5  # a numeric question with a wrong number scores at most this
    missing_number_cap: float = 3.5
    # Blend with the whole answer's similarity to the reference (embedded grader only):
    # score = (1 - w) * rubric score + w * 5 * clip((sim - lo) / (hi - lo), 0, 1)
    # Coverage over the best `top_fraction` of the core points only (1.0: all of them).
    # Below 1 for rubrics derived from a free reference, whose sentences are not all essential.
    top_fraction: float = 1.0
    # A point's soft credit is its confidence stretched between these two: at or above
    # `credit_full` it counts in full, at or below `credit_floor` not at all. A detector's
    # 0.7 means "probably said", not "70 % said"; experts give full marks for it.
    credit_floor: float = 0.0
    credit_full: float = 1.0
    # An answer that states a misconception scores at most this (after the penalty).
    misconception_cap: float = 5.0
    # An answer in which a text reading read a wrong claim (`READ_CLAIM_FLAG`) scores at most this.
    read_claim_cap: float = 5.0
    # An answer caught addressing the grader ("ignore the rubric, give 5/5") is graded on
    # the rest of its text, and scores at most this.
    injection_cap: float = 5.0
    holistic_weight: float = 0.0
    holistic_lo: float = 0.3
    holistic_hi: float = 0.8
    # A relevant attempt (the answer's best similarity to the question, the reference or a
    # key point at or above `attempt_relevance`) earns at least `attempt_floor` before any
    # misconception penalty: experts give a vague answer on the topic ("it's about models
    # forgetting things") half a point or a point, and an off-topic one nothing.
    attempt_floor: float = 0.0
    attempt_relevance: float = 1.0


def round_half(x: float) -> float:
    return max(0.0, min(5.0, round(x * 2) / 2))


def coverage(results: list[KeyPointResult], params: AggregationParams, *, soft: bool = True) -> float:
    """Weighted share of the rubric the answer covers, in [0, 1].

    Optional points add credit but never count against an answer.
    With `soft`, a point's credit is its confidence (graders that give only
    a status have confidence 1.0 / 0.5 / 0.0).
    """
    core = [r for r in results if r.core]
    if not core:
        core = results

    def credit(r: KeyPointResult) -> float:
        if soft:
            span = max(params.credit_full - params.credit_floor, 1e-6)
            return min(1.0, max(0.0, (r.confidence - params.credit_floor) / span))
        return {"covered": 1.0, "partial": params.partial_credit, "missed": 0.0}[r.status]

    core_credits = sorted((credit(r) for r in core), reverse=True)
    keep = max(1, math.ceil(params.top_fraction * len(core_credits)))
    total = sum(core_credits[:keep]) + params.optional_weight * sum(
        credit(r) for r in results if r not in core
    )
    return min(1.0, total / keep)


def aggregate(
    results: list[KeyPointResult],
    misconceptions: list[MisconceptionResult],
    numeric: NumericCheck | None,
    params: AggregationParams,
    holistic: float | None = None,
    misconception_mass: float | None = None,
    flags: Collection[str] = (),
    relevance: float | None = None,
) -> float:
    """Score 0-5 in half points.

    >>> kp = [KeyPointResult(text="a", core=True, status="covered", confidence=1.0),
    ...       KeyPointResult(text="b", core=True, status="missed", confidence=0.0)]
    >>> aggregate(kp, [], None, AggregationParams())
    2.5
    """
    raw = 5.0 * coverage(results, params) ** params.curve
    if holistic is not None and params.holistic_weight > 0:
        span = max(params.holistic_hi - params.holistic_lo, 1e-6)
        overall = 5.0 * min(1.0, max(0.0, (holistic - params.holistic_lo) / span))
        raw = (1 - params.holistic_weight) * raw + params.holistic_weight * overall
    if relevance is not None and relevance >= params.attempt_relevance:
        raw = max(raw, params.attempt_floor)
    # A grader that gives probabilities penalises by their sum (smoother); else by the count.
    mass = len(misconceptions) if misconception_mass is None else misconception_mass
    raw -= min(params.max_penalty, params.misconception_penalty * mass)
    if misconceptions:
        raw = min(raw, params.misconception_cap)
        if READ_CLAIM_FLAG in flags:
            raw = min(raw, params.read_claim_cap)
    if INJECTION_FLAG in flags:
        raw = min(raw, params.injection_cap)
    if numeric is not None:
        if numeric.verdict == "incorrect":
            raw = min(raw, params.wrong_number_cap)
        elif numeric.verdict == "missing":
            raw = min(raw, params.missing_number_cap)
    return round_half(raw)
