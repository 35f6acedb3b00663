"""A key point said with its roles swapped between its two clauses (`grading/roles.py`).

"use E4M3 for forward weights and activations, E5M2 for gradients" said as "weights and
activations in E5M2, gradients in E4M3" holds the same words; only which term goes with which
clause differs. The reading finds two clauses of a sentence that each carry a word of the
point's other clause in one slot of the point, and stays silent where the sentence keeps the
clauses apart or crosses the words of a list. No model.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.grading.calibration import MisconceptionFeatures, PointFeatures, load_calibration
from interviewer.grading.decision import Analysis, decide
from interviewer.grading.grade import READ_CLAIM_FLAG, aggregate
from interviewer.grading.roles import read_roles
from interviewer.grading.text import segment
from interviewer.settings import load_settings

FP8 = ["use E4M3 for forward weights and activations, E5M2 for gradients"]
WRITTEN = Path(__file__).resolve().parents[1] / "evals" / "polarity" / "written.jsonl"


def turned(sentence: str, points: list[list[str]] | None = None) -> str | None:
    reading = read_roles(points or [FP8], [sentence])[0]
    return None if reading is None else reading.wrong_claim


@pytest.mark.parametrize(
    "sentence",
    [
        "Forward weights and activations go in E5M2, and the gradients in E4M3.",
        "Gradients get E4M3 because they need range, while weights and activations in the forward pass get E5M2.",
        "E5M2 forward, E4M3 for the grads.",
    ],
)
def test_a_point_with_its_terms_exchanged_between_clauses_is_read_as_turned_round(sentence: str) -> None:
    assert turned(sentence) == "use e5m2 for forward weights and activations, e4m3 for gradients"


@pytest.mark.parametrize(
    "sentence",
    [
        "Forward weights and activations go in E4M3, and the gradients in E5M2.",
        "Gradients get E5M2 because they need range, while the forward pass uses E4M3.",
        "E4M3 and E5M2 are the two FP8 formats.",  # one clause: no roles to swap
    ],
)
def test_a_point_said_the_right_way_round_in_any_order_is_not_read(sentence: str) -> None:
    assert turned(sentence) is None


def test_crossed_synonyms_of_a_list_are_not_swapped_roles() -> None:
    point = ["Freed memory allows larger batches, longer sequences or bigger models"]
    said = "The freed memory pays for bigger batches, longer sequences or larger models."
    assert turned(said, [point]) is None


def test_no_phrasing_or_reference_sentence_of_the_bank_reads_as_its_own_point_turned_round() -> None:
    bank = load_bank(load_settings())
    for q in bank:
        points = [[kp.text, *kp.alternatives] for kp in q.key_points]
        for k, phrasings in enumerate(points):
            for phrasing in phrasings:
                assert read_roles(points, [f"I'd say {phrasing}."])[k] is None, (q.id, phrasing)
        sentences = [s.text for s in segment(q.reference) if s.level == "sentence"]
        assert read_roles(points, sentences) == [None] * len(points), q.id


def test_written_sentences_with_swapped_roles_are_read_and_right_ones_are_not() -> None:
    """The calibration split's written sentences about key points (`evals/polarity/written.jsonl`):
    no sentence that states its point is read as turned round; some that swap its roles are (12
    of 158 on rubric-29, none of the other kinds of error: most writers swap roles in new words)."""
    bank = load_bank(load_settings())
    right_read, swapped_read, other_read = 0, 0, 0
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] != "key_point":
            continue
        points = [[kp.text, *kp.alternatives] for kp in bank.get(row["question_id"]).key_points]
        k = row["index"]
        right_read += sum(read_roles(points, [s])[k] is not None for s in row["states"])
        for wrong in row["contradicts"]:
            read = read_roles(points, [wrong["sentence"]])[k] is not None
            if wrong["error"] == "swapped-roles":
                swapped_read += read
            else:
                other_read += read
    assert right_read == 0
    assert swapped_read >= 10
    assert other_read <= 2


def test_an_answer_with_a_wrong_claim_read_in_its_words_is_held_to_the_cap_and_told_so() -> None:
    """The decision's side, on a hand-built analysis (no model): every point of 000-05 said, the
    recipe with its formats exchanged. A wrong claim a text reading finds (not the similarity
    detector's guess) holds the grade to `read_claim_cap`, flagged so that the interview's running
    score after follow-ups keeps the cap, and the feedback says why."""
    question = load_bank(load_settings()).get("000-05")
    said = "Weights and activations on the forward pass go in E5M2, and the gradients go in E4M3."
    strong = PointFeatures(
        similarity=0.9, overlap=1.0, soft_recall=1.0, static_similarity=0.9, distinctiveness=0.3
    )
    base = Analysis(
        flags=[],
        numeric=None,
        spans=[said],
        sentences=[said],
        key_points=[strong for _ in question.key_points],
        misconceptions=[MisconceptionFeatures() for _ in question.rubric.misconceptions],
    )
    calibration = load_calibration()
    cap = calibration.aggregation.read_claim_cap
    assert cap < 5
    assert decide(question, base, calibration).score == 5.0
    swap = read_roles([[kp.text, *kp.alternatives] for kp in question.key_points], [said])
    assert swap[2] is not None
    grade = decide(question, replace(base, point_swaps=swap), calibration)
    assert grade.key_points[2].status == "missed"
    assert grade.score == cap and READ_CLAIM_FLAG in grade.flags
    assert f"holds the grade to {cap:g} at most" in grade.feedback
    # every point said again in follow-ups: the shared aggregator still holds the cap
    covered = [r.model_copy(update={"status": "covered", "confidence": 1.0}) for r in grade.key_points]
    assert aggregate(covered, grade.misconceptions, None, calibration.aggregation, flags=grade.flags) == cap
