"""The embedded grader's fitted constants, its named inputs, and the stamp that ties them together.

`PointFeatures` and `MisconceptionFeatures` are what `rubric.analyze` measures for
each key point and misconception; `PointWeights` and `MisconceptionWeights` are
the logistic weights `evals/calibrate.py` fits on them, field for field, so the
grader, the calibration script and the tests cannot disagree about an order.

`calibration.json` is stamped with the grader version it was fitted for and a
hash of the calibration split it was fitted on. `load_calibration()` reads it
once per process and refuses a file fitted for another grader version, with a
message that says to run `python evals/calibrate.py`.

This module computes no similarity and reads no answer; it only holds numbers.

    >>> w = PointWeights(similarity=2.0, overlap=1.0, bias=-1.0)
    >>> w.logit(PointFeatures(similarity=0.5, overlap=0.25))
    0.25
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from interviewer.corpus.schema import Question
from interviewer.errors import InterviewerError
from interviewer.grading.grade import AggregationParams

GRADER_VERSION = "rubric-33"
CLAIM_READER_VERSION = f"{GRADER_VERSION}+claim-reader"
CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
# With the claim reader on (`Settings.claim_reader`), every constant is fitted again with its
# `support` inputs: `python evals/calibrate.py --claim-reader smollm2` writes this file.
CLAIM_READER_FILE = Path(__file__).with_name("calibration-claim-reader.json")
REFIT = "run `python evals/calibrate.py` in a checkout to refit it (with `--claim-reader smollm2` for the claim reader's file)"


class CalibrationMismatch(InterviewerError):
    """calibration.json was fitted for another grader version, or is unreadable."""


@dataclass(frozen=True)
class PointFeatures:
    """How well the answer's best span states one key point (the model inputs, in weight order)."""

    similarity: float = 0.0  # cosine of the best span to the point's phrasings (MiniLM)
    overlap: float = 0.0  # IDF-weighted share of the point's content words said (question's words left out)
    margin: float = 0.0  # <= 0: how much closer that span is to a rival (a misconception, another point)
    soft_recall: float = 0.0  # BERTScore-style match of the point's tokens in the answer
    distinctiveness: float = 0.0  # see `rubric.distinctiveness`
    static_similarity: float = 0.0  # the best span's similarity under WordLlama
    # how much closer that span is to the point than to its wrong twin (0: no twin)
    twin_margin: float = 0.0
    # the polarity reader on (point, that span's sentence): states minus contradicts (0: not read)
    polarity: float = 0.0
    # what the whole answer adds to the point's likelihood under a small language model
    # (`models.support`): said in any words, higher; said the other way round or with
    # another term, lower
    support: float = 0.0
    span: int = 0  # index of that span in `Analysis.spans` (evidence, not an input)


@dataclass(frozen=True)
class MisconceptionFeatures:
    """How strongly one span states a misconception (the model inputs, in weight order)."""

    similarity: float = 0.0
    overlap: float = 0.0  # its words said in that span (0 when the span's negation differs)
    margin: float = -1.0  # how much closer that span is to the wrong claim than to the closest key point
    own_words: float = 0.0  # the misconception's own words (not the point's) said in one span
    own_gap: float = 0.0  # own words said minus the contradicted point's own words said
    twin_margin: float = 0.0  # how much closer that span is to the wrong claim than to its corrected twin
    # the polarity reader on (wrong claim, that span's sentence): states minus contradicts
    polarity: float = 0.0
    support: float = 0.0  # what the answer adds to the wrong claim's likelihood (`models.support`)
    span: int = 0


def feature_row(features: PointFeatures | MisconceptionFeatures) -> list[float]:
    """The inputs as a row for fitting, in the weights' order (the span is evidence, not an input).

    >>> feature_row(MisconceptionFeatures(similarity=0.9, own_words=0.5))
    [0.9, 0.0, -1.0, 0.5, 0.0, 0.0, 0.0, 0.0]
    """
    return [getattr(features, f.name) for f in fields(features) if f.name != "span"]


class _Weights(BaseModel):
    bias: float = 0.0

    def logit(self, features: PointFeatures | MisconceptionFeatures) -> float:
        """Sum of weight x input in field order, then the bias (the order the fit used)."""
        total = 0.0
        for name, value in zip(self.input_names(), feature_row(features), strict=True):
            total += getattr(self, name) * value
        return total + self.bias

    @classmethod
    def input_names(cls) -> list[str]:
        return [n for n in cls.model_fields if n != "bias"]

    @classmethod
    def from_vector(cls, weights: Iterable[float], bias: float) -> _Weights:
        return cls(**dict(zip(cls.input_names(), map(float, weights), strict=True)), bias=float(bias))


class PointWeights(_Weights):
    similarity: float = 14.0
    overlap: float = 3.0
    margin: float = 5.0
    soft_recall: float = 0.0
    distinctiveness: float = 0.0
    static_similarity: float = 0.0
    twin_margin: float = 0.0
    polarity: float = 0.0
    support: float = 0.0
    bias: float = -9.0


class MisconceptionWeights(_Weights):
    similarity: float = 14.0
    overlap: float = 3.0
    margin: float = 10.0
    own_words: float = 0.0
    own_gap: float = 0.0
    twin_margin: float = 0.0
    polarity: float = 0.0
    support: float = 0.0
    bias: float = -11.5


class SecondReaderThresholds(BaseModel):
    """How the second reader's reading (P(claim) / (P(claim) + P(twin))) moves a grade (`grading/verify.py`;
    fitted by `evals/verify_sweep.py`). The defaults change nothing."""

    point_denied: float = 0.0  # a credited key point read below this earns nothing and its opposite is named
    misconception_said: float = 1.01  # a misconception read at or above this is stated
    misconception_denied: float = 0.0  # one read below this is not, whatever the detector says
    cap: float = 5.0  # an answer with a wrong claim the reader confirmed scores at most this
    fitted_on: str = ""  # what the thresholds were chosen on (model and split)


class Calibration(BaseModel):
    """Every constant the grader uses; fitted once on the calibration split."""

    grader_version: str = GRADER_VERSION
    data_hash: str = ""  # sha256 of the calibration answers it was fitted on (see `data_hash`)
    points: PointWeights = PointWeights()
    covered: float = 0.6  # credit at or above -> "covered"
    partial: float = 0.3  # credit at or above -> "partial"
    polarity_penalty: float = 0.35  # similarity lost when negation differs on the same words
    # a key point whose evidence the polarity reader reads as contradicted (states minus
    # contradicts at or below minus this) earns nothing and its wrong twin counts as stated
    contradicted: float = 2.0  # 2.0: never
    # the sentence a stated misconception is quoted from earns no credit for a key point
    # that the polarity reader does not read as stated there
    withdraw_stated: bool = False
    # Twin flips: a span at least POLARITY_GATE-similar to a claim that is this much closer
    # to the claim's twin than to the claim says the twin. A key point so said earns nothing
    # and its wrong twin counts as stated; a misconception whose span is this much closer
    # to it than to its corrected twin counts as stated. 9.0: never.
    point_flip: float = 9.0
    misconception_flip: float = 9.0
    # A key point the answer talks about (its best span at least `unsupported_gate` similar)
    # but does not make likely (support at or below `unsupported`: the claim reader finds it
    # said the other way round, or with another term or number) earns nothing and is named as
    # a wrong claim, quoted and set right. 9.0 / -9.0: never.
    unsupported_gate: float = 9.0
    unsupported: float = -9.0
    misconceptions: MisconceptionWeights = MisconceptionWeights()  # stated when sigmoid(logit) >= 0.5
    soft_misconceptions: bool = False  # True: penalise by the detector's probability, not its verdict
    # Best similarity to the rubric and to the question below this, and the answer closer to
    # another question's reference answer than to this one's -> off-topic
    off_topic: float = 0.3
    aggregation: AggregationParams = AggregationParams()
    # For rubrics derived from a free reference (`grade --question --reference`, user documents).
    free_aggregation: AggregationParams = AggregationParams()
    free_off_topic: float = 0.3
    second_reader: SecondReaderThresholds = SecondReaderThresholds()

    def for_question(self, question: Question) -> tuple[AggregationParams, float]:
        """(aggregation, off-topic threshold) for this question's kind of rubric."""
        if question.rubric.derived:
            return self.free_aggregation, self.free_off_topic
        return self.aggregation, self.off_topic

    @classmethod
    def read(cls, path: Path = CALIBRATION_FILE, version: str = GRADER_VERSION) -> Calibration:
        """The calibration in `path`, checked against the grader `version` (defaults if no file)."""
        if not path.exists():
            return cls(grader_version=version)
        try:
            calibration = cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except ValueError as exc:
            raise CalibrationMismatch(f"{path} is not a valid calibration ({exc}); {REFIT}.") from exc
        if calibration.grader_version != version:
            raise CalibrationMismatch(
                f"{path} was fitted for grader {calibration.grader_version!r}, "
                f"but this grader is {version!r}; {REFIT}."
            )
        return calibration

    def write(self, path: Path = CALIBRATION_FILE) -> None:
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


@cache
def load_calibration(claim_reader: bool = False) -> Calibration:
    """The shipped calibration, read and checked once per process: the default grader's, or
    the one fitted with the claim reader's inputs."""
    if claim_reader:
        return Calibration.read(CLAIM_READER_FILE, CLAIM_READER_VERSION)
    return Calibration.read()


def data_hash(records: Iterable[dict[str, Any]]) -> str:
    """A stable hash of calibration answers: their ids, texts and expert labels, in id order.

    >>> data_hash([{"id": "b", "answer": "x"}, {"id": "a"}]) == data_hash([{"id": "a"}, {"id": "b", "answer": "x"}])
    True
    """
    rows = sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records)
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()[:16]
