"""A key point said with one of its terms swapped for one the rubric sets against it
(`grading/substitution.py`): "weight decay" where the point says "gradient clipping",
"raise" where it says "lower", "100" where it says "1.0".

Sentence vectors put the two at one point; this reading aligns the sentence with the
point word by word and reads the term that stands in the point's own slot. It stays silent
where the answer also says the point's own term, where the term sits in a negated clause or
a clause of its own, where it is another point's term or the point's subject, and where a
number agrees (a range, a rounding, a counter's start). Pure text: no weights needed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.grading.substitution import opposed, read_points, read_substitution
from interviewer.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
CLIPPING = "make sure gradient clipping is on"
LOWER = "fix it by lowering the learning rate"
NORM = "use gradient clipping with max norm 1.0"


def read(claim: str, sentence: str, answer: str | None = None) -> str | None:
    found = read_substitution(claim, sentence, answer=sentence if answer is None else answer)
    return None if found is None else found.said


def test_a_term_set_against_the_points_term_is_read_as_a_swap_and_named_as_said() -> None:
    found = read_substitution(CLIPPING, "First, make sure weight decay is on.", answer="")
    assert found is not None
    assert (found.said, found.instead_of) == ("weight decay", "gradient clipping")
    assert found.wrong_claim == "make sure weight decay is on"  # the point as the sentence says it
    assert found.sentence == "First, make sure weight decay is on."  # quoted verbatim


@pytest.mark.parametrize(
    ("claim", "sentence", "said"),
    [
        (LOWER, "The way out is to raise the learning rate so it can jump out of that basin.", "raise"),
        ("add their losses to the main loss with lower weights",
         "You add their losses to the main loss, weighted higher than the main head.", "higher"),
        (NORM, "Use gradient clipping with a max norm of 100.", "100"),
    ],
)  # fmt: skip
def test_a_reversed_direction_or_another_number_in_the_points_slot_is_read(
    claim: str, sentence: str, said: str
) -> None:
    assert read(claim, sentence) == said


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        (CLIPPING, "Make sure gradient clipping is on."),  # the point itself
        (CLIPPING, "Make sure weight decay is on, but the fix is gradient clipping."),  # says both
        (LOWER, "Don't raise the learning rate."),  # the term in a negated clause
        ("store only some activations at layer boundaries in the forward pass",
         "You store activations at layer boundaries and recompute the rest during the backward pass."),
        ("fp16 keeps a narrower exponent range than fp32", "bf16 keeps the exponent range of fp32."),
        (NORM, "Use gradient clipping with a max norm of 1."),  # the same number
        ("replay about 5 to 15 percent general pretraining data", "Replay about 10 percent general pretraining data."),
        ("the expected initial loss is ln 10, about 2.303 nats", "The expected initial loss is ln 10, about 2.3026 nats."),
        ("full learning rate at step zero can blow up the run", "The full learning rate at step one can blow up the run."),
        ("each GPU pushes 50,000 tokens per second", "The eight GPUs push 4 × 10⁵ tokens per second."),  # 4e5, no 4
    ],
)  # fmt: skip
def test_a_sentence_that_says_the_point_or_another_claim_is_not_read_as_a_swap(
    claim: str, sentence: str
) -> None:
    assert read(claim, sentence) is None


def test_an_answer_that_says_the_points_own_term_elsewhere_is_not_read() -> None:
    answer = "Make sure weight decay is on. Gradient clipping matters too."
    assert read(CLIPPING, "Make sure weight decay is on.", answer) is None


def test_a_term_another_point_says_belongs_to_that_point() -> None:
    points = [
        ["in training BatchNorm normalizes with the current mini-batch mean and variance"],
        ["in eval mode BatchNorm uses the running mean and variance"],
    ]
    said = "In training BatchNorm normalizes with the running mean and variance."
    assert read_points(points, [said], said) == [None, None]


def test_a_discourse_word_at_the_start_is_no_term() -> None:
    assert read("roll back to the last good checkpoint", "First, roll back to the good checkpoint.") is None


def test_a_two_word_point_is_read_when_its_other_word_stands_next_to_the_term() -> None:
    assert read("LR too high", "So the LR's too low for this curvature.") == "low"
    assert read("LR too high", "The LR is high enough; the loss is too low to matter.") is None
    assert read("LR too high", "So the LR is way too high.") is None


def test_a_term_the_speaker_takes_back_is_not_read() -> None:
    sentence = "Make sure weight decay, sorry, clipping is on."
    assert read(CLIPPING, sentence) is None
    assert read(CLIPPING, "Make sure weight decay is on.") == "weight decay"


@pytest.mark.parametrize(
    ("claim", "sentence", "said", "wrong_claim"),
    [
        (NORM, "Clip the gradient norm at 100.", "100", "use gradient clipping with max norm 100"),
        (NORM, "A max norm of a hundred is what the gradients get clipped to.", "100",
         "use gradient clipping with max norm 100"),
        ("the decay is typically 0.999 to 0.9999", "Decay around 0.5 to 0.9.", "0.5 to 0.9",
         "the decay is typically 0.5 to 0.9"),
        ("Prevent with QK-norm, z-loss, Adam beta2 about 0.95 and clipping at 1.0",
         "QK-norm, z-loss, beta2 0.9999, clip at 100.", "0.9999",
         "prevent with qk-norm, z-loss, adam beta2 about 0.9999 and clipping at 1.0"),
        ("bf16 uses 2 bytes per parameter", "In bf16, each parameter takes 4 bytes.", "4",
         "bf16 uses 4 bytes per parameter"),
    ],
)  # fmt: skip
def test_a_points_number_said_otherwise_in_other_words_is_read(
    claim: str, sentence: str, said: str, wrong_claim: str
) -> None:
    """Word order is free here: the sentence says most of the point's words, and next to a word
    that stands by the point's number, another number."""
    found = read_substitution(claim, sentence, answer=sentence)
    assert found is not None
    assert (found.said, found.wrong_claim) == (said, wrong_claim)


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        # counts something else
        ("uniform predictions give each class probability one tenth",
         "The softmax is flat, so each of the ten classes gets probability one tenth."),
        ("Replay about 5 to 15 percent general pretraining data in the mix",
         "Replay: about 1 in 10 tokens drawn from the general pretraining data."),  # a ratio
        ("E5M2 has 5 exponent and 2 mantissa bits, max about 57344",
         "E4M3 has 4 exponent and 3 mantissa bits, max about 448."),  # another format
        ("stage 1 shards the optimizer states", "Stage 2 also shards the optimizer states' gradients."),
        (NORM, "Clip the gradient norm at 1, not 100."),  # the point's own number, and a denied one
        (NORM, "Clip the gradient norm at 100, sorry, at 1."),  # taken back
        ("the decay is typically 0.999 to 0.9999", "The decay is about 0.9995."),  # inside the range
        ("for example 4 micro-batches of 8, stepping the optimizer once after all 4",
         "Accumulate over micro-batches of 8 to an effective batch of 32."),  # an example
        ("the model starts overfitting after epoch 5",
         "The model is overfitting, so train it for another 10 to 20 epochs."),  # a count of epochs
        ("the backward pass costs about twice the forward pass, a step about 3 forward passes",
         "The backward pass is about two forward passes."),  # "twice" is 2
    ],
)  # fmt: skip
def test_a_number_of_something_else_or_the_points_own_is_not_read(claim: str, sentence: str) -> None:
    assert read(claim, sentence) is None


@pytest.mark.parametrize(
    ("claim", "sentence", "said"),
    [
        ("early stopping at the validation minimum", "Stop at the train loss minimum.", "train"),
        ("Loss exploding to NaN points to LR too high or numerical overflow",
         "NaN loss: LR too low, or overflow.", "low"),
        ("updates are tiny relative to the weights", "Updates are huge next to the weights.", "huge"),
        ("divide the gradients by the scale factor before the optimizer step",
         "Divide the gradients by the scale factor after the optimizer step.", "after"),
    ],
)  # fmt: skip
def test_an_opposed_term_in_other_words_is_read(claim: str, sentence: str, said: str) -> None:
    assert read(claim, sentence) == said


def test_a_swapped_term_inside_a_hyphenated_word_is_quoted_as_the_whole_word() -> None:
    found = read_substitution(
        "in training BatchNorm normalizes with the current mini-batch mean and variance",
        "In train mode BN normalizes using the running mean and variance.",
        answer="In train mode BN normalizes using the running mean and variance.",
    )
    assert found is not None
    assert (found.said, found.instead_of) == ("running", "mini-batch")
    assert found.wrong_claim == "in training batchnorm normalizes with the current running mean and variance"


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        # the point turned round as a whole: right
        ("a larger batch allows a higher learning rate", "A smaller batch needs a lower learning rate."),
        # "after" governs "backward", not the optimizer step
        ("divide the gradients by the scale factor before the optimizer step",
         "After backward you unscale the gradients by the scale factor, then step the optimizer."),
        ("early stopping at the validation minimum",
         "Stop at the validation minimum, not where the train loss bottoms out."),  # says both
    ],
)  # fmt: skip
def test_a_point_turned_round_or_a_term_about_something_else_is_not_read(claim: str, sentence: str) -> None:
    assert read(claim, sentence) is None


def test_every_phrasing_of_every_bank_point_said_as_is_reads_as_no_swap() -> None:
    """Measured over the whole bank: 0 of 1,523 phrasings read as any point of their question
    swapped, in word order or by its number (rubric-26)."""
    bank = load_bank(load_settings())
    wrong = []
    for q in bank.questions:
        points = [[kp.text, *kp.alternatives] for kp in q.rubric.key_points]
        for phrasings in points:
            for phrasing in phrasings:
                said = f"I'd say {phrasing}."
                if any(read_points(points, [said], said)):
                    wrong.append((q.id, phrasing))
    assert wrong == []


def test_written_wrong_sentences_are_read_and_right_ones_are_not() -> None:
    """A floor on the calibration split's written sentences (`evals/polarity/written.jsonl`),
    on which the any-order readings were chosen: rubric-26 reads 200 of the 1,176 that say a
    point wrong (rubric-24: 147), 44 of the 131 that give it a wrong number (23), and 2 of the
    1,176 that say a point right (2)."""
    import json

    bank = load_bank(load_settings())
    right = wrong_read = numbers = numbers_read = 0
    for line in (ROOT / "evals" / "polarity" / "written.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] != "key_point":
            continue
        kp = bank.get(row["question_id"]).rubric.key_points[row["index"]]
        phrasings = [kp.text, *kp.alternatives]
        right += sum(read_points([phrasings], [s], s)[0] is not None for s in row["states"])
        for wrong in row["contradicts"]:
            said = wrong["sentence"]
            read_wrong = read_points([phrasings], [said], said)[0] is not None
            wrong_read += read_wrong
            numbers += wrong["error"] == "wrong-number"
            numbers_read += read_wrong and wrong["error"] == "wrong-number"
    assert numbers == 131 and numbers_read >= 40
    assert wrong_read >= 185
    assert right <= 2


def test_the_rubrics_own_wrong_twins_are_read_as_swaps() -> None:
    """A floor, in sample (the opposed terms come from these twins): 96 of the 420 key-point
    twins said alone read as their point swapped (rubric-23). The rest swap a term another
    point says, the subject, more than three words, or no single stretch."""
    bank = load_bank(load_settings())
    read_as_swapped = total = 0
    for q in bank.questions:
        points = [[kp.text, *kp.alternatives] for kp in q.rubric.key_points]
        for k, kp in enumerate(q.rubric.key_points):
            if kp.twin:
                total += 1
                said = f"I'd say {kp.twin}."
                read_as_swapped += read_points(points, [said], said)[k] is not None
    assert total == 420 and read_as_swapped >= 90


def test_opposed_terms_read_both_ways_round_and_a_hedge_only_against_its_absolute() -> None:
    pairs = opposed()
    assert ("weight", "decay") in pairs[("gradient", "clipp")] and ("gradient", "clipp") in pairs[
        ("weight", "decay")
    ]
    assert ("lower",) in pairs[("higher",)]
    # the rubrics' own pairs hold no hedge; "always" stands against the hedges it overstates
    assert "alway" not in (ROOT / "interviewer" / "grading" / "substitutions.yaml").read_text()
    assert pairs[("usual",)] == {("alway",), ("never",)} and ("often",) in pairs[("alway",)]


@pytest.mark.parametrize(
    ("sentence", "said"),
    [
        ("A loss spike is always a bad batch of data.", "always"),
        ("Loss spikes always come from a bad batch of data.", "always"),
        ("A loss spike is almost always a bad batch of data.", None),  # a hedge too
        ("A loss spike is pretty much always a bad batch of data.", None),
        ("A loss spike is often a bad batch of data.", None),  # hedge for hedge
        ("A loss spike is usually, not always, a bad batch of data.", None),
    ],
)  # fmt: skip
def test_an_absolute_where_the_point_hedges_is_read_as_over_general(sentence: str, said: str | None) -> None:
    assert read("a loss spike is usually a bad batch of data", sentence) == said


def test_a_hedge_that_opens_the_point_is_not_its_subject() -> None:
    """002-19's point "usually a bad batch of data": its subject is the bad batch, so an
    absolute in the hedge's place is read."""
    assert (
        read("usually a bad batch of data", "A gradient norm spike is always a bad batch of data.")
        == "always"
    )


def test_the_opposed_terms_file_is_what_the_rubrics_give() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "evals" / "build_substitutions.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_a_name_said_alone_in_place_of_the_points_is_the_point_said_wrong() -> None:
    """ "That's underfitting." for 002-04's "a widening train-validation gap means overfitting",
    whose twin says "underfitting": nothing to align, but the sentence names the twin's term
    and nothing else. Not read without the frame of a diagnosis ("Underfitting." may answer
    another part of the question), denied, taken back, or where the answer says the point's own
    term too."""
    q = load_bank(load_settings()).get("002-04")
    points = [[kp.text, *kp.alternatives] for kp in q.rubric.key_points]
    twins = [kp.twin or "" for kp in q.rubric.key_points]

    def reads(sentence: str, answer: str | None = None) -> list[int]:
        found = read_points(points, [sentence], sentence if answer is None else answer, twins)
        return [k for k, f in enumerate(found) if f is not None]

    found = read_points(points, ["That's underfitting."], "That's underfitting.", twins)[0]
    assert found is not None and found.wrong_claim == "a widening train-validation gap means underfitting"
    assert reads("Sounds like underfitting to me.") == [0]
    for right in ("That's overfitting.", "That's not underfitting.", "Underfitting.",
                  "It's underfitting, sorry, overfitting."):  # fmt: skip
        assert reads(right) == [], right
    assert reads("That's underfitting.", "That's underfitting. Or overfitting, really.") == []


def test_no_bank_point_said_in_a_diagnosis_frame_reads_as_its_own_twin() -> None:
    """Every phrasing of every bank point said as a diagnosis ("That's <phrasing>.") reads as no
    point of its question said wrong: a point's own words, or another point's, are no twin's term."""
    bank = load_bank(load_settings())
    wrong = []
    for q in bank.questions:
        points = [[kp.text, *kp.alternatives] for kp in q.rubric.key_points]
        twins = [kp.twin or "" for kp in q.rubric.key_points]
        for phrasings in points:
            for phrasing in phrasings:
                said = f"That's {phrasing}."
                if any(read_points(points, [said], said, twins)):
                    wrong.append((q.id, phrasing))
    assert wrong == []
