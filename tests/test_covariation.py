"""Which way two quantities move together in a sentence (`grading/covariation.py`).

"scale the learning rate linearly with batch size" and "scale the learning rate inversely
with batch size" differ in one word, which an answer rarely says: it says "increase the batch,
decrease the learning rate". The reading takes the sign of the relation from the direction
words next to each quantity, reads a claim only where its twin turns that sign, and stays
silent on a negation, a question, or a sentence that names one quantity. No model.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.grading.calibration import MisconceptionFeatures, PointFeatures, load_calibration
from interviewer.grading.covariation import read_covariation, relation_sign
from interviewer.grading.decision import Analysis, decide
from interviewer.grading.grade import NumericCheck
from interviewer.grading.order import OrderReading
from interviewer.settings import load_settings

LINEAR = "scale the learning rate linearly with batch size"
INVERSE = "scale the learning rate inversely with batch size"
WRITTEN = Path(__file__).resolve().parents[1] / "evals" / "polarity" / "written.jsonl"


def lean(sentence: str) -> int | None:
    reading = read_covariation(LINEAR, INVERSE, [sentence])
    return None if reading is None else reading.lean


def test_the_issues_example_reads_as_the_inverse_relation() -> None:
    said = "When you increase the batch size you should decrease the learning rate by the same factor."
    assert read_covariation(LINEAR, INVERSE, ["It's the linear scaling rule.", said]) == OrderReading(
        -1, said
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "Double the batch, double the learning rate.",
        "A smaller batch needs a lower learning rate.",
        "When the batch size grows, raise the LR by the same factor.",
        "8x the batch means 8x the learning rate.",
        "The learning rate should scale proportionally with the batch size.",
        "Eight times the batch means eight times the learning rate.",
        "With twice the batch, use twice the LR.",
        "With a larger batch you can use a higher LR, up to the critical batch size.",
    ],
)
def test_quantities_that_move_together_read_as_the_linear_rule(sentence: str) -> None:
    assert lean(sentence) == 1


@pytest.mark.parametrize(
    "sentence",
    [
        "Bigger batch, proportionally smaller LR.",
        "Halve the learning rate whenever you double the batch.",
        "So when the batch grows by a factor k, the LR goes down by that same factor k.",
        "The learning rate is inversely proportional to the batch size.",
    ],
)
def test_quantities_that_move_apart_read_as_the_inverse_relation(sentence: str) -> None:
    assert lean(sentence) == -1


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't lower the learning rate as the batch grows.",  # a negation: not read
        "Should I decrease the learning rate for a bigger batch?",  # a question
        "Use a bigger batch and a warmup.",  # one quantity
        "Increase the batch, and raise or lower the learning rate as needed.",  # both ways at once
        "The learning rate was 3e-4 and the batch size 512.",  # no direction, no relation word
        "Use a batch four times larger and the same learning rate.",  # a quantity held
        "Keep the learning rate fixed when the batch doubles.",
    ],
)
def test_a_sentence_that_does_not_commit_to_a_sign_is_not_read(sentence: str) -> None:
    assert lean(sentence) is None


def test_any_two_quantities_of_the_cue_list_are_read_the_same_way() -> None:
    wrong, right = "use a bigger model to reduce overfitting", "use a smaller model to reduce overfitting"
    said = "A larger network will overfit less, so scale the model up."
    assert read_covariation(wrong, right, [said]) == OrderReading(1, said)  # the misconception stated
    assert read_covariation(wrong, right, ["Shrink the model to cut overfitting."]).lean == -1
    # a third quantity named does not hide the two a claim relates
    assert lean("Double the batch and double the learning rate, whatever the model size.") == 1


def test_a_quantity_held_while_the_other_moves_is_a_relation_of_its_own() -> None:
    """Keeping the learning rate the same when the batch size grows holds one quantity and moves
    the other: the misconception is read where an answer does so, its twin where the answer
    moves both together, and neither where it holds the batch instead."""
    kept, raised = (
        "keep the learning rate the same when the batch size grows",
        "raise the learning rate proportionally when the batch size grows",
    )
    for said in (
        "I'd keep the learning rate fixed and increase the batch size to 1024.",
        "Keep the same LR when you change the batch size.",
        "Use a batch four times larger and the same learning rate.",
    ):
        assert read_covariation(kept, raised, [said]) == OrderReading(1, said), said
    assert read_covariation(kept, raised, ["When the batch grows 4x, raise the LR 4x."]).lean == -1
    assert read_covariation(kept, raised, ["Keep the batch size fixed and raise the LR."]) is None
    assert relation_sign("Keep the LR fixed.", ("batch-size", "learning-rate")) is None  # nothing moves


def test_a_direction_word_between_two_quantities_goes_to_the_one_it_follows_when_that_one_has_none() -> None:
    """In "gradient variance shrinks as batch size grows", "shrinks" is the variance's, "grows" the
    batch's; "increase the batch and decrease the LR" still gives "decrease" to the LR."""
    pair = ("batch-size", "gradient-noise")
    assert relation_sign("gradient variance shrinks as batch size grows", pair) == -1
    assert relation_sign("A bigger batch means a less noisy gradient.", pair) == -1
    assert relation_sign("The larger batch gives a higher-noise estimate.", pair) == 1
    assert relation_sign("increase the batch and decrease the LR", ("batch-size", "learning-rate")) == -1


def test_a_quantitys_own_comparative_says_its_direction() -> None:
    """ "noisier" is more gradient noise (`covariation.comparatives`), read where no direction
    word stands by the quantity."""
    claim = "a larger batch is a lower-noise gradient estimate you can trust further"
    twin = "a larger batch is a higher-noise gradient estimate you can trust less"
    said = "A bigger batch gives you a noisier gradient."
    assert read_covariation(claim, twin, [said]) == OrderReading(-1, said)
    assert read_covariation(claim, twin, ["Smaller batches give noisier gradients."]).lean == 1
    assert read_covariation(claim, twin, ["The gradient is noisier."]) is None  # one quantity


def test_only_claims_whose_twin_turns_the_sign_are_read() -> None:
    assert read_covariation(LINEAR, None, ["Double the batch, halve the LR."]) is None
    same_sign = "scale the learning rate with the square root of the batch size"
    assert read_covariation(LINEAR, same_sign, ["Double the batch, halve the LR."]) is None
    assert relation_sign("Use gradient clipping at 1.0.", ("batch-size", "learning-rate")) is None
    # a twin that also changes a hedge: "bigger models overfit more" is not the misconception
    hedged, hedged_twin = (
        "bigger models always overfit more once they can fit the training set",
        "bigger models can overfit less once they can fit the training set",
    )
    assert read_covariation(hedged, hedged_twin, ["Classically, bigger models overfit more."]) is None


def test_every_signed_claim_of_the_bank_reads_its_own_phrasings_as_itself_and_its_twin_as_the_twin() -> None:
    bank = load_bank(load_settings())
    signed = [
        item
        for q in bank
        for item in [*q.key_points, *q.rubric.misconceptions]
        if read_covariation(item.text, item.twin, [item.text]) is not None
    ]
    assert len(signed) >= 15  # the linear scaling rule in four documents and its misconceptions, ...
    for item in signed:
        for phrasing in (item.text, *item.alternatives):
            reading = read_covariation(item.text, item.twin, [phrasing])
            assert reading is None or reading.lean == 1, phrasing
        assert read_covariation(item.text, item.twin, [item.twin]).lean == -1, item.twin


def test_written_sentences_about_signed_claims_are_read_the_right_way_round() -> None:
    """The calibration split's written sentences (`evals/polarity/written.jsonl`): of those
    about a signed claim, no sentence that states the claim reads as its twin, and most that
    turn the relation round do (14 on rubric-28; 16 on rubric-30, where "noisier" says its own
    direction; one that gives a wrong factor with the right sign is not read)."""
    bank = load_bank(load_settings())
    right_as_twin, wrong_as_twin = 0, 0
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        question = bank.get(row["question_id"])
        items = question.key_points if row["kind"] == "key_point" else question.rubric.misconceptions
        twin = items[row["index"]].twin
        for sentence in row["states"]:
            reading = read_covariation(row["claim"], twin, [sentence])
            right_as_twin += reading is not None and reading.lean < 0
        for wrong in row["contradicts"]:
            reading = read_covariation(row["claim"], twin, [wrong["sentence"]])
            wrong_as_twin += reading is not None and reading.lean < 0
    assert right_as_twin == 0
    assert wrong_as_twin >= 15


def test_a_numeric_point_said_the_twins_way_earns_nothing_for_the_number_of_the_other_quantity() -> None:
    """The decision's side, on a hand-built analysis (no model): "4x" is the answer's number,
    but it says the batch grows 4x and the learning rate shrinks to a quarter."""
    question = load_bank(load_settings()).get("004-10")
    said = "Since the batch is 4x bigger, I'd cut the learning rate to 0.25 times the old value."
    point = question.key_points[0]
    base = Analysis(
        flags=[],
        numeric=NumericCheck(target=4, unit="x", tolerance=0.1, found=4, found_text="4x", verdict="correct"),
        spans=[said],
        sentences=[said],
        key_points=[PointFeatures() for _ in question.key_points],
        misconceptions=[MisconceptionFeatures() for _ in question.rubric.misconceptions],
    )
    calibration = load_calibration()
    assert decide(question, base, calibration).key_points[0].status == "covered"  # the number alone
    turned = replace(base, point_order=[OrderReading(lean=-1, sentence=said), None, None, None])
    grade = decide(question, turned, calibration)
    assert grade.key_points[0].status == "missed"
    # "4x" was the batch's; the learning rate's number is the quarter
    assert grade.numeric is not None and (grade.numeric.verdict, grade.numeric.found) == ("incorrect", 0.25)
    assert (point.twin, said, point.text) in {
        (m.text, m.evidence, m.correction) for m in grade.misconceptions
    }
