"""The embedded grader's decision: an `Analysis` (what `rubric.RubricGrader.analyze`
measured) and a `Calibration` (what `evals/calibrate.py` fitted) -> a `Grade`.

Pure: it reads no file, runs no model and keeps no state, so the grader, the
calibration script (which decides thousands of stored analyses per candidate
calibration) and the tests call the same function. It does not read answers.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import TypeVar

from interviewer.corpus.schema import Question
from interviewer.grading.calibration import Calibration, MisconceptionFeatures, PointFeatures
from interviewer.grading.feedback import build_grade
from interviewer.grading.grade import (
    ATTEMPT_FLAG,
    READ_CLAIM_FLAG,
    AggregationParams,
    Grade,
    KeyPointResult,
    MisconceptionResult,
    NumericCheck,
    Provenance,
    aggregate,
)
from interviewer.grading.numbers import extract_quantities, same_value
from interviewer.grading.order import OrderReading
from interviewer.grading.substitution import Substitution
from interviewer.grading.text import clean, words

# An answer that says this share of a key point's content words (IDF-weighted, the question's
# own words left out) is on topic however far its embedding lies: "the stack operation for
# enqueue is the push operation" against the one-word reference "push". Off-topic answers in
# the calibration split reach 0.63 at most.
ON_TOPIC_OVERLAP = 0.8
# A numeric target's key point gets at most this credit from an answer with the wrong number
# (the aggregator's `wrong_number_cap` then caps the score).
WRONG_NUMBER_CREDIT = 0.25
# The polarity reader reads a claim against its best span's sentence only when that span is
# at least this close to the claim (MiniLM cosine): a far sentence states neither, and each
# read pair costs a cross-encoder pass.
POLARITY_GATE = 0.4


EMPTY_FLAGS = {"empty", "no-answer", "gibberish", "not-english"}
T = TypeVar("T")


@dataclass
class Analysis:
    """Raw evidence for one answer: what `decide` turns into a grade with a calibration."""

    flags: list[str]
    numeric: NumericCheck | None
    spans: list[str] = field(default_factory=list)
    key_points: list[PointFeatures] = field(default_factory=list)  # one per key point, in rubric order
    misconceptions: list[MisconceptionFeatures] = field(default_factory=list)  # one per misconception
    holistic: float = 0.0  # similarity of the whole answer to the reference answer
    elsewhere: float | None = None  # its best similarity to another bank question's reference answer
    # similarity of the whole answer to the question itself: "you pass a pointer to the first
    # element" is about "how are arrays passed to functions?" though far from "by reference"
    asked: float = 0.0
    # it says no content word the question does not ("Critical batch size? It's the critical one.")
    restates_question: bool = False
    sentences: list[str] = field(default_factory=list)  # per span, the sentence that holds it
    # the second reader's reading per key point / misconception (`verify.Readings`; None: not read);
    # empty when no second reader is on (`grading/verify.py`)
    point_reads: list[float | None] = field(default_factory=list)
    misconception_reads: list[float | None] = field(default_factory=list)
    # which way round the answer says each claim whose twin swaps its two terms around a
    # contrast (`order.read_order`; None: no such twin, or no sentence leans either way)
    point_order: list[OrderReading | None] = field(default_factory=list)
    misconception_order: list[OrderReading | None] = field(default_factory=list)
    # each key point said with one of its terms swapped for an opposed one
    # (`substitution.read_point`; None: not so said; empty: not read, as for a free reference)
    point_swaps: list[Substitution | None] = field(default_factory=list)
    # the sentence that rejects each key point ("it's a myth that <point>"), and the one that
    # rejects each misconception's corrected twin, which states the misconception
    # (`rubric.rejected_right_claims`; None: not rejected)
    point_rejections: list[str | None] = field(default_factory=list)
    misconception_rejections: list[str | None] = field(default_factory=list)
    # the key point each misconception contradicts: the one sharing most of the misconception's
    # and its corrected twin's words (None: no key point shares any)
    misconception_rivals: list[int | None] = field(default_factory=list)


_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:to|-|–|and)\s*(\d+(?:\.\d+)?)")


def gives_other_numbers(phrasings: list[str], text: str) -> bool:
    """Whether a claim that is a number ("4", "2 bytes", "about 5 to 15 percent": numbers
    and units make at least half its words) is answered by `text` with other numbers only:
    "five" does not state "4". A value agrees when it is equal, lies in a range the claim
    gives, or is the same share written as a fraction or a percentage ("a tenth" for "10
    percent"). A text with no numbers says nothing against the claim; nor do numbers in a
    wordier claim ("all but the first one"), where they are rarely the point."""
    said = [q.value for q in extract_quantities(clean(text))]
    if not said:
        return False
    for phrase in phrasings:
        cleaned = clean(phrase)
        quantities = extract_quantities(cleaned)
        claimed = [q.value for q in quantities]
        if 2 * sum(len(words(q.text)) for q in quantities) < len(words(cleaned)):
            return False
        ranges = [(float(a), float(b)) for a, b in _RANGE.findall(cleaned)]
        for value in said:
            for v in (value, value * 100, value / 100):
                if any(same_value(c, v) for c in claimed):
                    return False
                if any(min(a, b) <= v <= max(a, b) for a, b in ranges):
                    return False
    return True


def numeric_point(question: Question) -> int | None:
    """Index of the key point that states the target number, if any."""
    target = question.rubric.numeric
    if target is None:
        return None
    for i, kp in enumerate(question.key_points):
        for q in extract_quantities(kp.text):
            if abs(q.value - target.value) <= max(target.tolerance, 1e-9 * abs(target.value)):
                return i
    return None


def _number_quote(spans: list[str], found: str) -> str:
    """The shortest stretch of the answer that says the number found, quoted as it was said
    ("clip it at one"), rather than the bare number read from it ("1").

    >>> _number_quote(["Clip the global norm at one.", "clip the global norm at one"], "1")
    'clip the global norm at one'
    >>> _number_quote([], "1")
    '1'
    """
    said = re.compile(rf"(?<![\w.]){re.escape(found)}(?![\w])")
    holding = [s for s in spans if said.search(clean(s, determiners=True))]
    return min(holding, key=len) if holding else found


def _inside_any(span: str, others: list[str]) -> bool:
    """The span lies inside one of `others` or holds one (the same sentence or a part of it)."""
    return any(span in other or other in span for other in others if other)


def _at(readings: list[T | None], i: int) -> T | None:
    """Claim i's reading (`verify.Readings`, `order.read_order`), or None where it was not read."""
    return readings[i] if i < len(readings) else None


def same_outcome(a: Grade, b: Grade) -> bool:
    """Whether two grades tell the candidate the same: the score, each key point's status and
    evidence, each wrong claim named with its evidence, the number's check, the flags, the
    feedback and the follow-up. Confidence (a point's credit before its threshold) may differ.

    >>> from interviewer.grading.grade import KeyPointResult
    >>> point = KeyPointResult(text="a", core=True, status="covered", confidence=0.7)
    >>> g = Grade(score=3.0, key_points=[point], grader=Provenance(grader="rubric", version="v"))
    >>> same_outcome(g, g.model_copy(update={"key_points": [g.key_points[0].model_copy(update={"confidence": 0.72})]}))
    True
    >>> same_outcome(g, g.model_copy(update={"score": 2.5}))
    False
    """

    def told(g: Grade) -> tuple[object, ...]:
        return (
            g.score,
            tuple((k.status, k.evidence) for k in g.key_points),
            tuple((m.text, m.evidence, m.correction) for m in g.misconceptions),
            g.numeric,
            tuple(g.flags),
            g.feedback,
            g.follow_up,
        )

    return told(a) == told(b)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def decide(question: Question, a: Analysis, calibration: Calibration, t0: float | None = None) -> Grade:
    """An analysis and a calibration -> the grade: thresholds and aggregation, the only place
    calibration constants are used. Pure: the grader, `evals/calibrate.py` (which calls it
    thousands of times over stored analyses) and the tests call it alike."""
    t0 = time.perf_counter() if t0 is None else t0
    c = calibration
    flags = list(a.flags)
    if set(flags) & EMPTY_FLAGS:
        return _finish(question, c, [], [], a.numeric, flags, t0, zero=True)
    numeric = a.numeric  # the check as read; a point said the twin's way can overturn it
    stated = []
    mass = 0.0
    second = c.second_reader
    confirmed = False  # the second reader confirmed a wrong claim: the answer is capped
    read_claims = 0  # wrong claims read (not guessed) by a text reading: the answer is capped (flags)
    read_wrong: dict[int, str] = {}  # key point: a sentence read, not guessed, to state its wrong claim
    for j, (m, mf) in enumerate(zip(question.rubric.misconceptions, a.misconceptions, strict=True)):
        p = _sigmoid(c.misconceptions.logit(mf))
        evidence = a.spans[mf.span] if a.spans else ""
        read_here = False  # stated by a text reading, not guessed
        if mf.similarity >= POLARITY_GATE and mf.twin_margin >= c.misconception_flip:
            p = 1.0  # the span says the wrong claim, not its corrected twin
        if (order := _at(a.misconception_order, j)) is not None:
            # its terms said in the wrong claim's order, or in its corrected twin's
            p, evidence = (1.0, order.sentence) if order.lean > 0 else (0.0, evidence)
            read_here = order.lean > 0
            if order.lean > 0 and (rival := _at(a.misconception_rivals, j)) is not None:
                read_wrong[rival] = order.sentence
        if (rejecting := _at(a.misconception_rejections, j)) is not None:
            p, evidence = 1.0, rejecting  # its corrected twin rejected: "it's a myth that <twin>"
            read_here = True
            if (rival := _at(a.misconception_rivals, j)) is not None:
                read_wrong[rival] = rejecting
        read = _at(a.misconception_reads, j)
        if read is not None:  # the second reader has the last word on what the sentence says
            p = 1.0 if read >= second.misconception_said else 0.0 if read < second.misconception_denied else p
            confirmed = confirmed or read >= second.misconception_said
        mass += p if c.soft_misconceptions else float(p >= 0.5)
        if p >= 0.5:
            stated.append(MisconceptionResult(text=m.text, evidence=evidence, correction=m.twin))
            read_claims += read_here
    results = []
    contradicted: list[MisconceptionResult] = []
    wrong_spans = [m.evidence for m in stated]
    numeric_idx = numeric_point(question)
    # A free reference has no numeric target: its points' own numbers are checked instead.
    derived = question.rubric.derived
    said = " ".join(a.spans) if derived else ""
    for i, (kp, features) in enumerate(zip(question.key_points, a.key_points, strict=True)):
        credit = _sigmoid(c.points.logit(features))
        evidence = a.spans[features.span]
        if derived and said and gives_other_numbers([kp.text, *kp.alternatives], said):
            credit = 0.0  # "four bytes" does not state "2 bytes"
        if (order := _at(a.point_order, i)) is not None and order.lean < 0:
            # its terms said in its twin's order ("convergence, not vanishing gradients"), or its
            # quantities moved the twin's way ("4x the batch, a quarter of the learning rate"):
            # no credit, even for the point's number said about the other quantity, and the
            # sentence is named and set right
            credit, evidence = 0.0, order.sentence
            read_claims += 1
            contradicted.append(
                MisconceptionResult(text=kp.twin or "", evidence=evidence, correction=kp.text)
            )
            if i == numeric_idx and numeric is not None and numeric.verdict == "correct":
                # the number found is the other quantity's ("4x the batch"): the point's own is
                # another number of that sentence ("a quarter, so 0.25 times"), and wrong
                target = numeric.target
                other = [q for q in extract_quantities(order.sentence) if not same_value(q.value, target)]
                update = {"verdict": "incorrect", "found": other[0].value if other else None,
                          "found_text": other[0].text if other else ""}  # fmt: skip
                numeric = numeric.model_copy(update=update)
        elif i == numeric_idx and numeric is not None:
            correct = numeric.verdict == "correct"
            credit = 1.0 if correct else min(credit, WRONG_NUMBER_CREDIT)
            evidence = _number_quote(a.spans, numeric.found_text) if correct else evidence
        elif (rejecting := _at(a.point_rejections, i)) is not None:
            # the answer rejects the point ("it's a myth that <point>"): it holds the opposite
            credit, evidence = 0.0, rejecting
            read_claims += 1
            contradicted.append(
                MisconceptionResult(
                    text=kp.twin or f"the opposite of: {kp.text}", evidence=evidence, correction=kp.text
                )
            )
        elif (swap := _at(a.point_swaps, i)) is not None and (credit >= c.partial or not swap.needs_credit):
            # said with a term swapped ("make sure weight decay is on"), in words close enough
            # to earn the point: no credit, and the sentence is named and set right
            credit, evidence = 0.0, swap.sentence
            read_claims += 1
            contradicted.append(
                MisconceptionResult(text=swap.wrong_claim, evidence=evidence, correction=kp.text)
            )
        elif i in read_wrong and _inside_any(evidence, [read_wrong[i]]):
            # "keep the same LR when you change the batch size" states a wrong claim, read by its
            # words' order or its quantities' moves: no evidence for the point that claim contradicts
            credit = 0.0
        elif c.withdraw_stated and features.polarity <= 0 and _inside_any(evidence, wrong_spans):
            # the sentence that states a wrong claim is no evidence for the point it contradicts
            credit = 0.0
        elif features.similarity >= POLARITY_GATE and (
            features.polarity <= -c.contradicted or features.twin_margin <= -c.point_flip
        ):
            # the sentence says the point the wrong way round: no credit, and the wrong claim is named
            credit = 0.0
            contradicted.append(
                MisconceptionResult(
                    text=kp.twin or f"the opposite of: {kp.text}", evidence=evidence, correction=kp.text
                )
            )
        elif features.similarity >= c.unsupported_gate and features.support <= c.unsupported:
            # about the point, yet the claim reader does not hear it: said another way round,
            # with another term or number. No credit, and the sentence is named and set right
            credit = 0.0
            contradicted.append(
                MisconceptionResult(
                    text=f"a different claim from: {kp.text}", evidence=evidence, correction=kp.text
                )
            )
        elif (read := _at(a.point_reads, i)) is not None and read < second.point_denied:
            # the second reader hears the point's twin in the quoted sentence: named, set right
            credit = 0.0
            confirmed = True
            contradicted.append(
                MisconceptionResult(
                    text=kp.twin or f"a different claim from: {kp.text}",
                    evidence=evidence,
                    correction=kp.text,
                )
            )
        status = "covered" if credit >= c.covered else "partial" if credit >= c.partial else "missed"
        results.append(
            KeyPointResult(
                text=kp.text,
                core=kp.core,
                status=status,  # type: ignore[arg-type]
                evidence=evidence if status != "missed" else "",
                confidence=round(credit, 4),
            )
        )
    # a contradicted point's wrong twin is a wrong claim too, unless the same sentence is already named
    named = {s.evidence for s in stated}
    for wrong in contradicted:
        if wrong.evidence not in named:
            stated.append(wrong)
            mass += 1.0
            named.add(wrong.evidence)
    if read_claims:
        flags.append(READ_CLAIM_FLAG)
    relevance = max([kp.similarity for kp in a.key_points] + [a.holistic, a.asked])
    says_a_point = max(kp.overlap for kp in a.key_points) >= ON_TOPIC_OVERLAP
    if (
        relevance < c.for_question(question)[1]
        and (a.elsewhere is None or a.elsewhere >= a.holistic)  # it fits another question better
        and not says_a_point
        and not (numeric and numeric.verdict == "correct")
    ):
        flags.append("off-topic")
        return _finish(question, c, results, stated, numeric, flags, t0, zero=True)
    return _finish(
        question, c, results, stated, numeric, flags, t0,
        holistic=a.holistic, misconception_mass=mass,
        relevance=None if a.restates_question else relevance,
        cap=second.cap if confirmed else None,
    )  # fmt: skip


def _finish(
    question: Question,
    calibration: Calibration,
    results: list[KeyPointResult],
    stated: list[MisconceptionResult],
    numeric: NumericCheck | None,
    flags: list[str],
    t0: float,
    *,
    zero: bool = False,
    holistic: float | None = None,
    misconception_mass: float | None = None,
    relevance: float | None = None,
    cap: float | None = None,
) -> Grade:
    if not results:
        results = [KeyPointResult(text=kp.text, core=kp.core, status="missed") for kp in question.key_points]
    if zero:
        results = [r.model_copy(update={"status": "missed", "evidence": ""}) for r in results]
    fitted = calibration.for_question(question)[0]
    params = fitted
    if cap is not None and cap < params.misconception_cap:
        params = params.model_copy(update={"misconception_cap": cap})
    # the same without a wrong claim's cap (the second reader's or a read claim's): what it earned
    uncapped = fitted.model_copy(update={"read_claim_cap": 5.0})

    def total(relevance: float | None, params: AggregationParams = params) -> float:
        return aggregate(
            results, stated, numeric, params,
            holistic=holistic, misconception_mass=misconception_mass, flags=flags, relevance=relevance,
        )  # fmt: skip

    score = 0.0 if zero else total(None)
    floored = 0.0 if zero or relevance is None else total(relevance)
    if floored > score:  # no point earned credit, but the answer is on the topic
        score, flags = floored, [*flags, ATTEMPT_FLAG]
    # the wrong claim's cap, where it took points the answer otherwise earned, is said in the feedback
    caps = [params.misconception_cap] if params.misconception_cap < fitted.misconception_cap else []
    caps += [fitted.read_claim_cap] if READ_CLAIM_FLAG in flags else []
    claim_cap = min(caps) if caps and total(None, uncapped) > score else None
    return build_grade(
        score, results, stated, numeric, flags, Provenance(grader="rubric", version=calibration.grader_version), t0,
        injection_cap=params.injection_cap, reference=question.reference, claim_cap=claim_cap,
    )  # fmt: skip
