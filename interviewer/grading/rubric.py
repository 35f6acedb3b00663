"""The embedded default grader: no LLM, no key, deterministic.

For each rubric key point it finds the answer span (sentence, clause or word
window) that best expresses it, by sentence-embedding similarity to the point
and its accepted alternatives, plus IDF-weighted word overlap. A logistic
curve fitted on the eval set's calibration split (`calibration.json`, written
by `evals/calibrate.py`) turns the two into a credit in [0, 1]. Negation is
checked on the matched span, so "do not restart from scratch" does not state
the misconception "restart from scratch". Scores come from the shared
aggregator in `grade.py`.

It does not phrase questions or follow-ups; it only grades.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from ..bank import load_bank
from ..embeddings import get_embedder
from ..schema import Question
from ..settings import Settings
from .grade import (
    AggregationParams,
    Grade,
    KeyPointResult,
    MisconceptionResult,
    NumericCheck,
    Provenance,
    aggregate,
)
from .numbers import check_numeric, extract_quantities
from .text import (
    IDF,
    Span,
    clean,
    content_stems,
    is_negated,
    looks_like_gibberish,
    says_dont_know,
    segment,
    strip_injections,
)

VERSION = "rubric-1"
CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
MAX_CHARS = 20_000  # longer answers are graded on their first 20k characters (flagged)


class Calibration(BaseModel):
    """Every constant the grader uses; fitted once on the calibration split."""

    w_sem: float = 14.0
    w_lex: float = 3.0
    bias: float = -9.0
    covered: float = 0.6  # credit at or above -> "covered"
    partial: float = 0.3  # credit at or above -> "partial"
    polarity_penalty: float = 0.2  # similarity lost when negation differs
    misconception: float = 0.75  # credit at or above -> misconception stated
    off_topic: float = 0.3  # best span similarity to anything in the rubric below this -> off-topic
    aggregation: AggregationParams = AggregationParams()

    @classmethod
    def load(cls, path: Path = CALIBRATION_FILE) -> Calibration:
        if path.exists():
            return cls.model_validate(json.loads(path.read_text()))
        return cls()


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class RubricGrader:
    name = "rubric"

    def __init__(self, settings: Settings, calibration: Calibration | None = None) -> None:
        self.settings = settings
        self.calibration = calibration or Calibration.load()
        self.embedder = get_embedder(settings.embedding_model)
        self._idf: IDF | None = None

    @property
    def idf(self) -> IDF:
        if self._idf is None:
            bank = load_bank(self.settings)
            self._idf = IDF([q.reference for q in bank] + [q.question for q in bank])
        return self._idf

    # -- the pieces -------------------------------------------------------

    def _match(
        self, phrasings: list[list[str]], spans: list[Span], span_vecs: np.ndarray, answer_stems: set[str]
    ) -> list[tuple[float, float, float, int]]:
        """For each item (a list of phrasings): (credit, similarity, overlap, best span index)."""
        flat = [p for group in phrasings for p in group]
        vecs = self.embedder.encode(flat)
        sims = span_vecs @ vecs.T  # (spans, phrasings)
        span_neg = np.array([is_negated(s.text) for s in spans])
        c = self.calibration
        out = []
        col = 0
        for group in phrasings:
            best = (-1.0, 0, 0.0)  # similarity, span, overlap
            for j, phrase in enumerate(group):
                neg = is_negated(phrase)
                column = sims[:, col + j] - c.polarity_penalty * (span_neg != neg)
                i = int(np.argmax(column))
                if column[i] > best[0]:
                    best = (float(column[i]), i, self.idf.recall(phrase, answer_stems))
            lex = max(self.idf.recall(p, answer_stems) for p in group)
            credit = _sigmoid(c.w_sem * best[0] + c.w_lex * lex + c.bias)
            out.append((credit, best[0], lex, best[1]))
            col += len(group)
        return out

    def _numeric_point(self, question: Question) -> int | None:
        """Index of the key point that states the target number, if any."""
        target = question.rubric.numeric
        if target is None:
            return None
        for i, kp in enumerate(question.key_points):
            for q in extract_quantities(kp.text):
                if abs(q.value - target.value) <= max(target.tolerance, 1e-9 * abs(target.value)):
                    return i
        return None

    # -- the grade --------------------------------------------------------

    def grade(self, question: Question, answer: str) -> Grade:
        t0 = time.perf_counter()
        flags: list[str] = []
        text = (answer or "").replace("\x00", " ")
        text = "".join(ch for ch in text if ch.isprintable() or ch in "\n\t")
        if len(text) > MAX_CHARS:
            text = text[:MAX_CHARS]
            flags.append("truncated")
        text, injected = strip_injections(text)
        if injected:
            flags.append("injection-ignored")
        cleaned = clean(text)
        rubric = question.rubric
        numeric: NumericCheck | None = check_numeric(cleaned, rubric.numeric) if rubric.numeric else None

        empty_reason = None
        if not cleaned or not content_stems(cleaned):
            empty_reason = "empty"
        elif says_dont_know(cleaned):
            empty_reason = "no-answer"
        elif looks_like_gibberish(cleaned):
            empty_reason = "gibberish"
        if empty_reason:
            flags.append(empty_reason)
            return self._finish(question, [], [], numeric, flags, t0, zero=True)

        spans = segment(text)
        span_vecs = self.embedder.encode([clean(s.text) or s.text for s in spans])
        answer_stems = set(content_stems(cleaned))
        kp_groups = [[kp.text, *kp.alternatives] for kp in rubric.key_points]
        mc_groups = [[m.text, *m.alternatives] for m in rubric.misconceptions]
        matches = self._match(kp_groups + mc_groups, spans, span_vecs, answer_stems)
        kp_matches, mc_matches = matches[: len(kp_groups)], matches[len(kp_groups) :]

        c = self.calibration
        results = []
        numeric_idx = self._numeric_point(question)
        for i, (kp, (credit, _sim, _lex, span_i)) in enumerate(zip(rubric.key_points, kp_matches, strict=True)):
            evidence = spans[span_i].text
            if i == numeric_idx and numeric is not None:
                credit = 1.0 if numeric.verdict == "correct" else min(credit, 0.25)
                evidence = numeric.found_text if numeric.verdict == "correct" else evidence
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
        stated = [
            MisconceptionResult(text=m.text, evidence=spans[span_i].text)
            for m, (credit, _s, _l, span_i) in zip(rubric.misconceptions, mc_matches, strict=True)
            if credit >= c.misconception
        ]
        best_sim = max((sim for _c, sim, _l, _i in matches), default=0.0)
        if best_sim < c.off_topic and not (numeric and numeric.verdict == "correct"):
            flags.append("off-topic")
            return self._finish(question, results, stated, numeric, flags, t0, zero=True)
        return self._finish(question, results, stated, numeric, flags, t0)

    def _finish(
        self,
        question: Question,
        results: list[KeyPointResult],
        stated: list[MisconceptionResult],
        numeric: NumericCheck | None,
        flags: list[str],
        t0: float,
        *,
        zero: bool = False,
    ) -> Grade:
        if not results:
            results = [
                KeyPointResult(text=kp.text, core=kp.core, status="missed") for kp in question.key_points
            ]
        if zero:
            results = [r.model_copy(update={"status": "missed", "evidence": ""}) for r in results]
        score = 0.0 if zero else aggregate(results, stated, numeric, self.calibration.aggregation)
        return Grade(
            score=score,
            key_points=results,
            misconceptions=stated,
            numeric=numeric,
            flags=flags,
            feedback=write_feedback(results, stated, numeric, flags),
            follow_up=pick_follow_up(results),
            grader=Provenance(grader=self.name, version=VERSION),
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
) -> str:
    """Two or three plain sentences: what was good, what is missing."""
    if "empty" in flags or "no-answer" in flags:
        return "No answer to grade. Try saying what you do know — partial answers earn partial credit."
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
    if "injection-ignored" in flags:
        parts.append("Instructions addressed to the grader were ignored.")
    return " ".join(parts) or "Complete answer."


_WS = re.compile(r"\s+")
