"""The question bank: every question has a reference and a rubric; numbers are right."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from interviewer.corpus.bank import derive_key_points, load_bank, make_user_question
from interviewer.corpus.schema import TOPICS
from interviewer.errors import BankError
from interviewer.settings import REPO_ROOT, load_settings


@pytest.fixture(scope="module")
def bank():  # type: ignore[no-untyped-def]
    return load_bank(load_settings(), fresh=True)


def test_the_bank_holds_all_132_questions_of_the_four_documents(bank) -> None:  # type: ignore[no-untyped-def]
    assert len(bank) == 132
    assert {q.source for q in bank} == {"000", "002", "003", "004"}
    assert len({q.id for q in bank}) == 132


def test_every_question_has_a_reference_and_enough_key_points(bank) -> None:  # type: ignore[no-untyped-def]
    for q in bank:
        quick = q.kind == "quick-fire"  # quick-fire answers are a few words by design
        assert len(q.reference) > (3 if quick else 40), q.id
        minimum = 1 if quick else 2
        assert len(q.key_points) >= minimum, q.id
        assert any(kp.core for kp in q.key_points), q.id
        assert q.topic in TOPICS and q.topic != "general", q.id


def test_teasers_became_proper_questions(bank) -> None:  # type: ignore[no-untyped-def]
    for q in bank.filter(source="000"):
        assert q.question.rstrip().endswith(("?", ".")) and len(q.question) < 400, q.id
        assert q.rubric.misconceptions, q.id


def test_a_question_the_document_keeps_as_a_note_is_shown_as_it_is_asked(bank) -> None:  # type: ignore[no-untyped-def]
    note, question = bank.get("002-41"), bank.get("003-07")
    assert note.question == "BF16 needs?" and note.title == note.ask
    assert note.title.startswith("What extra machinery")
    assert question.title == question.question == "What is deep double descent?"
    assert {q.source for q in bank if q.note} == {"002"}
    assert all(q.title.endswith("?") and len(q.title.split()) >= 5 for q in bank if q.note)


# Recomputed from the question text, independently of the rubric files.
NUMERIC_004 = {
    "004-01": math.log(10),  # uniform over 10 classes: -ln(1/10) nats
    "004-07": 3e-4 * 500 / 2000,  # linear warmup
    "004-08": 0 + 0.5 * (3e-4 - 0) * (1 + math.cos(math.pi * 0.5)),  # cosine at the midpoint
    "004-10": 1024 / 256,  # linear scaling: LR x4
    "004-12": math.sqrt(2 / 512),  # He init std
    "004-15": 4096 * 4096 + 4096,  # 16,781,312
    "004-16": 3 * 3 * 64 * 128 + 128,  # 73,856
    "004-17": 7e9 * 2 / 1e9,  # bf16 weights, GB
    "004-18": 7e9 * (2 + 2 + 4 + 4 + 4) / 1e9,  # Adam mixed precision, GB
    "004-20": 8 * 16 * 4,  # effective batch
    "004-21": 1e9 / (50_000 * 8) / 60,  # minutes for one pass
}


@pytest.mark.parametrize(("qid", "expected"), sorted(NUMERIC_004.items()))
def test_numeric_targets_of_004_match_a_recomputation(bank, qid: str, expected: float) -> None:  # type: ignore[no-untyped-def]
    target = bank.get(qid).rubric.numeric
    assert target is not None
    assert target.accepts(expected), (qid, target.value, expected)


def test_16_781_312_is_the_parameter_count_of_a_4096_layer_with_bias(bank) -> None:  # type: ignore[no-untyped-def]
    assert bank.get("004-15").rubric.numeric.value == 16_781_312


def test_overlapping_questions_share_a_concept(bank) -> None:  # type: ignore[no-untyped-def]
    concepts: dict[str, set[str]] = {}
    for q in bank:
        if q.concept:
            concepts.setdefault(q.concept, set()).add(q.source)
    for concept in ("gradient-accumulation", "loss-scaling", "batchnorm-train-eval", "warmup-cosine"):
        assert len(concepts.get(concept, set())) >= 2, concept


def test_a_malformed_rubric_file_names_the_file_and_field(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "rubrics").mkdir(parents=True)
    (corpus / "sources").symlink_to(REPO_ROOT / "corpus" / "sources")
    for doc in ("000", "003", "004"):
        (corpus / "rubrics" / f"{doc}.yaml").symlink_to(REPO_ROOT / "corpus" / "rubrics" / f"{doc}.yaml")
    (corpus / "rubrics" / "002.yaml").write_text(
        'source: "002"\nquestions:\n  "002-01":\n    topic: astrology\n'
    )
    with pytest.raises(BankError) as err:
        load_bank(load_settings(corpus_dir=corpus), fresh=True)
    assert "002.yaml" in str(err.value) and "topic" in str(err.value)


def test_key_points_are_derived_from_a_free_reference() -> None:
    points = derive_key_points("Clip at 1.0. Use BF16; checkpoint often.")
    assert [k.text for k in points] == ["Clip at 1.0", "Use BF16", "checkpoint often"]
    q = make_user_question("What do you do?", "Clip at 1.0. Use BF16.")
    assert q.id.startswith("user-") and len(q.key_points) == 2
    assert make_user_question("a", "b c").id == make_user_question("a", "b c").id  # stable ids


def test_every_bank_question_text_resolves_to_its_own_id(bank) -> None:  # type: ignore[no-untyped-def]
    for q in bank:
        assert bank.by_text(q.question) is q, q.id
        assert bank.by_text(q.question.lower().rstrip("?")) is q, q.id


def test_a_near_exact_question_text_resolves_and_another_question_does_not(bank) -> None:  # type: ignore[no-untyped-def]
    assert bank.by_text("Why warmup?").id == "002-07"
    assert bank.by_text("why warm up").id == "002-07"  # one space apart
    assert bank.by_text("Why do we use warmup and how long should it be?") is None
    assert bank.by_text("   ") is None


def test_a_question_id_given_as_the_question_text_resolves_to_that_question(bank) -> None:  # type: ignore[no-untyped-def]
    from interviewer.grading.commands import resolve_question
    from interviewer.settings import load_settings

    # found before any vector search: no index is needed
    assert resolve_question(load_settings(), bank, question=" 002-26 ").id == "002-26"
