"""The grader's constants: named, stamped with the grader version and the data they were fitted on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interviewer.errors import InterviewerError
from interviewer.evaluation.grades import load_answers
from interviewer.grading.calibration import (
    CALIBRATION_FILE,
    GRADER_VERSION,
    Calibration,
    CalibrationMismatch,
    MisconceptionFeatures,
    MisconceptionWeights,
    PointFeatures,
    PointWeights,
    data_hash,
    feature_row,
    load_calibration,
)


def test_the_shipped_calibration_is_for_this_grader_and_this_calibration_split() -> None:
    calibration = load_calibration()
    assert calibration.grader_version == GRADER_VERSION
    answers = load_answers(split="calibration")
    assert calibration.data_hash == data_hash(a.model_dump(mode="json") for a in answers)


def test_a_calibration_for_another_grader_version_is_refused_with_the_fix(tmp_path: Path) -> None:
    stale = json.loads(CALIBRATION_FILE.read_text())
    stale["grader_version"] = "rubric-1"
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(stale))
    with pytest.raises(CalibrationMismatch, match=r"fitted for grader .rubric-1.*python evals/calibrate\.py"):
        Calibration.read(path)
    path.write_text("{not json")
    with pytest.raises(InterviewerError, match=r"python evals/calibrate\.py"):
        Calibration.read(path)


def test_weights_and_features_share_their_names_so_no_order_is_matched_by_hand() -> None:
    point_inputs = [n for n in PointFeatures.__dataclass_fields__ if n != "span"]
    mis_inputs = [n for n in MisconceptionFeatures.__dataclass_fields__ if n != "span"]
    assert PointWeights.input_names() == point_inputs
    assert MisconceptionWeights.input_names() == mis_inputs
    w = PointWeights.from_vector(range(1, len(point_inputs) + 1), bias=-1.0)
    f = PointFeatures(similarity=1, static_similarity=2, polarity=3)
    assert w.logit(f) == 1 * 1 + 6 * 2 + 8 * 3 - 1.0
    assert feature_row(f) == [1, 0, 0, 0, 0, 2, 0, 3, 0]


def test_the_graph_reads_the_calibration_once_per_process() -> None:
    assert load_calibration() is load_calibration()
