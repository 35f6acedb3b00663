"""The readings of the formats and stages a key point names (`interviewer/grading/names.py`):
another point's words said of a point's stage, a point said with another format's name, and a
point's numbers given to each other's words."""

from __future__ import annotations

import json
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.grading.names import read_named_roles, read_number_roles, read_other_names
from interviewer.grading.text import names_agree, segment
from interviewer.settings import load_settings

WRITTEN = Path(__file__).resolve().parents[1] / "evals" / "polarity" / "written.jsonl"


def rubric(question_id: str) -> tuple[list[list[str]], str]:
    q = load_bank(load_settings()).get(question_id)
    return [[kp.text, *kp.alternatives] for kp in q.key_points], q.question


def test_another_points_words_said_of_a_points_stage_are_that_point_said_wrong() -> None:
    """ "stage 3 finally shards the optimizer states" says stage 1's point of stage 3: the stage-3
    point is read as said wrong, with the clause as its wrong claim. Each said of its own stage,
    in one sentence, nothing is read."""
    points, _ = rubric("003-36")
    wrong = "Stage 1 shards the parameters, stage 2 adds the gradients, and stage 3 finally shards the optimizer states."
    read = read_named_roles(points, [wrong])
    assert [k for k, r in enumerate(read) if r is not None] == [3]
    assert read[3] is not None and read[3].wrong_claim == "stage 3 finally shards the optimizer states"
    right = "Stage 1 shards the optimizer states, stage 2 adds the gradients, and stage 3 also shards the parameters."
    assert read_named_roles(points, [right]) == [None] * len(points)


def test_a_claim_said_of_another_format_is_not_read_against_a_point_that_denies_it() -> None:
    """ "FP16 requires loss scaling" shares its words with "BF16 needs no loss scaling", but says
    the opposite: it is not that point said of FP16."""
    points, _ = rubric("002-23")
    assert read_named_roles(points, ["FP16 requires loss scaling."]) == [None] * len(points)


def test_no_phrasing_or_reference_sentence_of_the_bank_reads_as_another_points_words_of_its_stage() -> None:
    bank = load_bank(load_settings())
    for q in bank:
        points = [[kp.text, *kp.alternatives] for kp in q.key_points]
        sentences = [s.text for s in segment(q.reference) if s.level == "sentence"]
        said = [f"I'd say {p}." for g in points for p in g]
        assert read_named_roles(points, sentences + said) == [None] * len(points), q.id


def test_written_sentences_that_state_their_point_are_not_read_as_another_points_words() -> None:
    """No written sentence that states its point (calibration split) is read by the named-roles
    reading for any point of its question."""
    bank = load_bank(load_settings())
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] != "key_point":
            continue
        points = [[kp.text, *kp.alternatives] for kp in bank.get(row["question_id"]).key_points]
        for s in row["states"]:
            assert read_named_roles(points, [s]) == [None] * len(points), s


def test_a_point_said_of_another_format_is_read_with_that_formats_name() -> None:
    """ "an FP64 instability" for "a numerical instability such as in FP16": the point said wrong."""
    points, question = rubric("002-19")
    said = "It can also be a numerical thing, like an FP64 instability."
    read = read_other_names(points, [said], said, question)
    assert [r.wrong_claim if r else None for r in read] == [
        None,
        "can be a numerical instability such as in fp64",
        None,
        None,
        None,
    ]


def test_a_point_said_of_another_stage_is_named_with_that_stage_in_its_wrong_claim() -> None:
    """ "like ZeRO-1" for "like ZeRO-3": the wrong claim the grade names says stage 1 where the
    point says ZeRO-3, however the point spells its stage."""
    points, question = rubric("003-37")
    said = "FSDP shards parameters, gradients and optimizer state across GPUs, like ZeRO-1 does."
    read = read_other_names(points, [said], said, question)
    assert read[0] is not None
    assert (
        read[0].wrong_claim
        == "fsdp shards parameters, gradients and optimizer state across gpus, like stage 1"
    )
    assert not any(read[1:])


def test_a_format_the_answer_or_the_question_names_elsewhere_is_not_swapped() -> None:
    """An answer that names the point's own format anywhere may be comparing the two; a question
    that names it ("FP16 needs loss scaling?") may be answered without naming it ("Yes, ...")."""
    points, question = rubric("002-19")
    said = "It can also be an FP64 instability."
    assert not any(read_other_names(points, [said], f"{said} Or FP16 overflow.", question))
    points, question = rubric("002-24")
    said = "BF16 needs exactly the same loss scaling."
    assert not any(read_other_names(points, [said], said, question))


def test_no_phrasing_or_reference_sentence_of_the_bank_is_read_as_said_of_another_format() -> None:
    for q in load_bank(load_settings()):
        points = [[kp.text, *kp.alternatives] for kp in q.key_points]
        sentences = [s.text for s in segment(q.reference) if s.level == "sentence"]
        assert not any(read_other_names(points, sentences, q.reference, q.question)), q.id
        for phrasing in (p for g in points for p in g):
            assert not any(read_other_names(points, [phrasing], phrasing, q.question)), (q.id, phrasing)


def test_written_sentences_said_of_another_format_are_read_and_right_ones_are_not() -> None:
    """The calibration split's written sentences about key points: none that states its point is
    read, for any point; some that put another format in the point's place are (3 on rubric-31)."""
    bank = load_bank(load_settings())
    right_read, wrong_read = 0, 0
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] != "key_point":
            continue
        q = bank.get(row["question_id"])
        points = [[kp.text, *kp.alternatives] for kp in q.key_points]
        right_read += sum(any(read_other_names(points, [s], s, q.question)) for s in row["states"])
        wrong_read += sum(
            read_other_names(points, [w["sentence"]], w["sentence"], q.question)[row["index"]] is not None
            for w in row["contradicts"]
        )
    assert right_read == 0
    assert wrong_read >= 3


def test_a_points_numbers_given_to_each_others_words_are_read_as_swapped() -> None:
    """ "three exponent bits and four mantissa bits" for E4M3's "4 exponent and 3 mantissa bits";
    said the right way, or with one number wrong (the number reading's case), nothing is read."""
    points, _ = rubric("000-05")
    swapped = read_number_roles(points, ["So E4M3 is three exponent bits and four mantissa bits, up to 448."])
    assert [r.wrong_claim if r else None for r in swapped][:2] == [
        "e4m3 has 3 exponent and 4 mantissa bits, max about 448",
        None,
    ]
    assert not any(read_number_roles(points, ["E4M3 has four exponent bits and three mantissa bits."]))
    assert not any(read_number_roles(points, ["E4M3 has four exponent bits and two mantissa bits."]))


def test_no_text_of_the_bank_and_no_written_right_sentence_has_its_numbers_swapped() -> None:
    bank = load_bank(load_settings())
    for q in bank:
        points = [[kp.text, *kp.alternatives] for kp in q.key_points]
        sentences = [s.text for s in segment(q.reference) if s.level == "sentence"]
        assert not any(read_number_roles(points, sentences + [p for g in points for p in g])), q.id
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] == "key_point":
            points = [[kp.text, *kp.alternatives] for kp in bank.get(row["question_id"]).key_points]
            assert not any(read_number_roles(points, row["states"])), row["claim"]


def test_a_name_a_point_denies_is_not_one_of_its_names() -> None:
    """002-29's "train in BF16 rather than FP16" is about BF16: a span naming only FP16 is no
    evidence for it, one naming BF16 (or both) still is."""
    points, _ = rubric("002-29")
    point = next(p for p in points if p[0] == "train in BF16 rather than FP16")
    assert not names_agree(point, "Usually it is an FP16 instability rather than a bad batch.")
    assert names_agree(point, "Switch from FP16 to BF16.")
    assert names_agree(point, "I would move the run to bf16.")
