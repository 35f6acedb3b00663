"""Which way round a sentence says "A, not B" when its twin is "B, not A" (`grading/order.py`).

"A, not B" and "B, not A" share every word; sentence vectors cannot tell them apart. The
order reading does, for the rubric twins that swap two terms around a contrast, and stays
silent (None) where the sentence words the claim its own way, denies first, says only one
of the terms, or where the twin is a reordering without a contrast ("E4M3 for weights,
E5M2 for gradients"), whose order depends on syntax. No model: no weights needed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.grading.calibration import MisconceptionFeatures, PointFeatures, load_calibration
from interviewer.grading.decision import Analysis, decide
from interviewer.grading.order import OrderReading, is_contrast_swap, is_reordering, order_lean, read_order
from interviewer.settings import load_settings

GRADIENT = "near-zero gradient norm usually means vanishing gradients, not convergence"
GRADIENT_TWIN = "near-zero gradient norm usually means convergence, not vanishing gradients"
EMA = "Evaluate and serve the EMA weights, not the final-step weights"
EMA_TWIN = "Evaluate and serve the final-step weights, not the EMA weights"
FP8 = "Use E4M3 for forward weights and activations, E5M2 for gradients"
FP8_TWIN = "Use E5M2 for forward weights and activations, E4M3 for gradients"


def test_the_issues_example_reads_as_the_twin_and_its_correction_as_the_claim() -> None:
    wrong = "A gradient norm dropping to about zero is usually convergence, not vanishing gradients."
    right = "A gradient norm dropping to about zero is usually vanishing gradients, not convergence."
    assert order_lean(GRADIENT, GRADIENT_TWIN, wrong) < 0
    assert order_lean(GRADIENT, GRADIENT_TWIN, right) > 0


@pytest.mark.parametrize(
    ("sentence", "lean"),
    [
        ("You evaluate and serve the EMA weights, not the final-step weights.", 1),
        ("You evaluate and serve the final-step weights, not the EMA weights.", -1),
        ("For evaluation you serve the EMA weights rather than the final-step weights.", 1),
        ("For evaluation you serve the final-step weights instead of the EMA weights.", -1),
    ],
)
def test_a_swap_around_a_contrast_is_read_the_way_it_is_said(sentence: str, lean: int) -> None:
    got = order_lean(EMA, EMA_TWIN, sentence)
    assert got is not None and (got > 0) == (lean > 0), got


@pytest.mark.parametrize(
    "sentence",
    [
        "It's not convergence; a near-zero gradient norm usually means vanishing gradients.",  # denial first
        "Instead of the final-step weights, evaluate and serve the EMA weights.",  # contrast first
        "Never evaluate and serve the final-step weights rather than the EMA weights.",  # a denied order
        "Serve the final-step weights and then the EMA weights.",  # no contrast between the two
        "Gradients get E5M2 because they need the range.",  # one of the two terms only
        "The loss went flat after a while.",  # neither
    ],
)
def test_a_sentence_that_words_the_claim_its_own_way_is_not_read(sentence: str) -> None:
    claim, twin = (
        (GRADIENT, GRADIENT_TWIN)
        if "gradient norm" in sentence
        else (EMA, EMA_TWIN)
        if "EMA" in sentence
        else (FP8, FP8_TWIN)
    )
    assert not order_lean(claim, twin, sentence)


def test_only_twins_that_swap_two_terms_around_a_contrast_are_read() -> None:
    assert is_contrast_swap("train in BF16 rather than FP16", "train in FP16 rather than BF16")
    assert not is_reordering("the learning rate is too low", "the learning rate is too high")
    assert (
        order_lean("the learning rate is too low", "the learning rate is too high", "It is too high.") is None
    )
    # a reordering whose order is syntax, not polarity: "forward weights and activations go in
    # E4M3, gradients in E5M2" is right, and says the formats in the twin's order
    assert is_reordering(FP8, FP8_TWIN) and not is_contrast_swap(FP8, FP8_TWIN)
    right = "The recipe puts forward weights and activations in E4M3 and gradients in E5M2."
    assert order_lean(FP8, FP8_TWIN, right) is None
    assert read_order(EMA, "", ["You serve the final-step weights, not the EMA weights."]) is None


def test_an_answer_is_read_by_its_clearest_sentence_the_claims_way_first() -> None:
    sentences = [
        "You evaluate and serve the final-step weights, not the EMA weights, for speed.",
        "Well, to be exact: you evaluate and serve the EMA weights, not the final-step weights.",
    ]
    reading = read_order(EMA, EMA_TWIN, sentences)
    assert reading is not None and reading.lean > 0 and reading.sentence == sentences[1]
    reading = read_order(EMA, EMA_TWIN, sentences[:1])
    assert reading is not None and reading.lean < 0 and reading.sentence == sentences[0]


def test_every_contrast_swap_in_the_bank_reads_against_its_claim_when_said_verbatim() -> None:
    bank = load_bank(load_settings())
    swaps = [
        (item.text, item.twin)
        for q in bank
        for item in [*q.key_points, *q.rubric.misconceptions]
        if item.twin and is_contrast_swap(item.text, item.twin)
    ]
    assert len(swaps) >= 7
    for claim, twin in swaps:
        assert order_lean(claim, twin, claim + ".") > 0, claim
        assert order_lean(claim, twin, twin + ".") < 0, twin


def test_a_misconception_is_stated_by_its_order_and_cleared_by_its_twins() -> None:
    """The decision's side of the reading, on a hand-built analysis (no model): a wrong claim
    read its own way round is stated, quoted and set right by its twin; read its corrected
    twin's way, it is not stated however close the detector's inputs put it."""
    question = load_bank(load_settings()).get("003-11")  # misconception: "bf16 needs more aggressive ..."
    wrong, right = question.rubric.misconceptions[0], "fp16 needs more aggressive loss scaling than bf16"
    said = "You know, bf16 needs more aggressive loss scaling than fp16 does."
    close = MisconceptionFeatures(similarity=0.95, overlap=1.0, margin=0.3, own_words=1.0, own_gap=1.0)
    base = Analysis(
        flags=[],
        numeric=None,
        spans=[said],
        sentences=[said],
        key_points=[PointFeatures() for _ in question.key_points],
        misconceptions=[MisconceptionFeatures() for _ in question.rubric.misconceptions],
    )
    calibration = load_calibration()
    assert decide(question, base, calibration).misconceptions == []  # far from every claim: nothing stated
    stated = replace(base, misconception_order=[OrderReading(lean=2, sentence=said)])
    assert [
        (m.text, m.evidence, m.correction) for m in decide(question, stated, calibration).misconceptions
    ] == [(wrong.text, said, wrong.twin)]
    detected = replace(base, misconceptions=[close] * len(question.rubric.misconceptions))
    assert decide(question, detected, calibration).misconceptions  # the detector alone states it
    cleared = replace(detected, misconception_order=[OrderReading(lean=-2, sentence=right)])
    assert wrong.text not in {m.text for m in decide(question, cleared, calibration).misconceptions}
