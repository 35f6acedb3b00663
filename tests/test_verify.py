"""The second reader: an LLM asked whether the quoted sentence says the claim, and what the grade
does with its answer.

Fast tests use a scripted backend (the decision is pure, the reader only asks); the real
path — llama.cpp in process and a real llama.cpp server, with SmolLM2 — is tested for
plumbing only (a 135M model's verdicts are junk). How well a real instruct model reads is
measured by `evals/verify_sweep.py`, `interviewer eval --verify` and
`evals/minimal_pairs.py --verify`, not asserted here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.errors import UnknownBackend
from interviewer.grading.calibration import SecondReaderThresholds, load_calibration
from interviewer.grading.decision import decide
from interviewer.grading.rubric import RubricGrader
from interviewer.grading.verify import SecondReader, second_reader
from interviewer.llm.base import Messages
from interviewer.settings import Settings, load_settings

SPIKE = "002-03"  # key points: a bad batch of data / numerical instability / roll back, skip, clip
RIGHT = (
    "A one-step spike is usually a bad batch of data, or sometimes a numerical instability in fp16. "
    "Roll back to the last good checkpoint, skip the offending batch and keep gradient clipping on."
)


class Scripted:
    """A backend that answers every yes/no read from a rule and records what it was asked."""

    name = "scripted"
    model = "scripted"

    def __init__(self, rule: Any) -> None:
        self.rule = rule
        self.asked: list[tuple[str, str]] = []

    def yes_probability(self, messages: Messages, *, timeout_s: float | None = None) -> float:
        text = messages[-1]["content"]
        claim = text.split("Answer key claim: ", 1)[1].split("\n", 1)[0]
        sentence = text.split("Candidate's sentence: ", 1)[1].rsplit("\nSame claim?", 1)[0]
        self.asked.append((claim, sentence))
        return float(self.rule(claim, sentence))


@pytest.fixture(scope="module")
def grader() -> RubricGrader:
    return RubricGrader(load_settings())


@pytest.fixture(scope="module")
def spike():  # type: ignore[no-untyped-def]
    return load_bank(load_settings()).get(SPIKE)


def reread(grader, question, answer, reader, thresholds):  # type: ignore[no-untyped-def]
    """The grade with the second reader's reads, under the given thresholds."""
    analysis = grader.analyze(question, answer)
    calibration = load_calibration().model_copy(update={"second_reader": thresholds})
    reads = reader.read(question, analysis, decide(question, analysis, calibration))
    analysis = replace(analysis, point_reads=reads.key_points, misconception_reads=reads.misconceptions)
    return decide(question, analysis, calibration)


STRICT = SecondReaderThresholds(point_denied=0.2, misconception_said=0.8, misconception_denied=0.2, cap=2.0)


def test_a_point_the_reader_says_is_not_said_earns_nothing_and_is_named(grader, spike) -> None:  # type: ignore[no-untyped-def]
    first = grader.grade(spike, RIGHT)
    assert first.key_points[0].status != "missed"
    bad_batch, twin = spike.key_points[0].text, spike.key_points[0].twin
    reader = SecondReader(Scripted(lambda claim, s: 0.05 if claim == bad_batch else 0.95))
    grade = reread(grader, spike, RIGHT, reader, STRICT)
    assert grade.key_points[0].status == "missed"
    (named,) = [m for m in grade.misconceptions if m.correction == bad_batch]
    assert named.text == twin  # the reader heard the twin: it is named, and set right
    assert named.evidence and named.evidence in RIGHT  # quoted from the answer
    assert "You said “" in grade.feedback and bad_batch.rstrip(".") in grade.feedback
    assert grade.score <= 2.0 < first.score  # a wrong claim the reader confirmed caps the answer


def test_a_misconception_the_reader_hears_is_stated_and_one_it_does_not_is_not(grader, spike) -> None:  # type: ignore[no-untyped-def]
    wrong = spike.rubric.misconceptions[0].text
    said = grader.grade(spike, wrong)
    assert wrong in {m.text for m in said.misconceptions}
    hears_the_twin = SecondReader(Scripted(lambda c, s: 0.01 if c == wrong else 0.99))
    cleared = reread(grader, spike, wrong, hears_the_twin, STRICT)
    assert wrong not in {m.text for m in cleared.misconceptions}
    hears_the_claim = SecondReader(Scripted(lambda c, s: 0.99 if c == wrong else 0.01))
    heard = reread(grader, spike, wrong, hears_the_claim, STRICT)
    assert wrong in {m.text for m in heard.misconceptions}
    undecided = SecondReader(Scripted(lambda c, s: 0.9))  # claim and twin alike: the detector decides
    assert wrong in {m.text for m in reread(grader, spike, wrong, undecided, STRICT).misconceptions}


def test_the_default_thresholds_change_no_grade(grader, spike) -> None:  # type: ignore[no-untyped-def]
    def verdict(grade):  # type: ignore[no-untyped-def]
        return grade.model_dump(exclude={"latency_ms"})

    for answer in (RIGHT, spike.rubric.misconceptions[0].text, "Lower the learning rate."):
        for p in (0.0, 0.5, 1.0):
            reader = SecondReader(Scripted(lambda c, s, p=p: p))
            graded = reread(grader, spike, answer, reader, SecondReaderThresholds())
            assert verdict(graded) == verdict(grader.decide(spike, grader.analyze(spike, answer)))


def test_the_reader_reads_credited_points_and_near_misconceptions_once(grader, spike) -> None:  # type: ignore[no-untyped-def]
    backend = Scripted(lambda c, s: 0.9)
    reader = SecondReader(backend)
    analysis = grader.analyze(spike, RIGHT)
    first = decide(spike, analysis, load_calibration())
    reads = reader.read(spike, analysis, first)
    credited = [
        r.status != "missed" and bool(kp.twin)
        for r, kp in zip(first.key_points, spike.key_points, strict=True)
    ]
    assert any(credited) and [r is not None for r in reads.key_points] == credited
    assert len(reads.misconceptions) == len(spike.rubric.misconceptions)
    asked = len(backend.asked)  # each claim read and its twin
    assert asked == 2 * (sum(credited) + sum(r is not None for r in reads.misconceptions))
    reader.read(spike, analysis, first)
    assert len(backend.asked) == asked  # the same (claim, sentence) is asked once
    claims = {c for c, _ in backend.asked}
    rubric = [*spike.key_points, *spike.rubric.misconceptions]
    assert claims <= {c.text for c in rubric} | {c.twin for c in rubric}
    assert all(s in RIGHT for _, s in backend.asked)  # whole sentences of the answer


def test_an_empty_answer_asks_the_reader_nothing(grader, spike) -> None:  # type: ignore[no-untyped-def]
    backend = Scripted(lambda c, s: 0.0)
    analysis = grader.analyze(spike, "   ")
    SecondReader(backend).read(spike, analysis, decide(spike, analysis, load_calibration()))
    assert backend.asked == []


def test_the_second_reader_is_off_unless_the_settings_name_a_backend() -> None:
    assert second_reader(Settings()) is None
    with pytest.raises(UnknownBackend, match="llama-cpp"):
        second_reader(Settings(verify="no-such-backend"))


def test_reads_are_json_round_trippable() -> None:
    """The sweep keeps reads as [claim, sentence, p] rows; probabilities are plain floats."""
    reader = SecondReader(Scripted(lambda c, s: 0.25))
    assert reader.prefers("a claim", "its twin", "a sentence") == 0.5
    assert json.loads(json.dumps([[c, s, p] for (c, s), p in reader.memo.items()])) == [
        ["a claim", "a sentence", 0.25],
        ["its twin", "a sentence", 0.25],
    ]
