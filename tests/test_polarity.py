"""Which way round a claim is said: the rubric's minimal pairs and the polarity reader.

A right answer and the same answer with its critical words reversed share their words;
the grade must still tell them apart. The rubric holds a twin for every misconception
(set right) and every core key point (set wrong); the polarity reader, trained on the
calibration split's twins only, is checked here on the held-out split's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import load_answers, split_of
from interviewer.grading.decision import same_outcome
from interviewer.grading.rubric import RubricGrader
from interviewer.models.polarity import polarity_reader
from interviewer.settings import load_settings

NEGATORS = re.compile(r"\b(not|no|never|n't|don't|doesn't|isn't)\b", re.I)


@pytest.fixture(scope="module")
def bank():  # type: ignore[no-untyped-def]
    return load_bank(load_settings())


def claims(bank, split: str | None = None):  # type: ignore[no-untyped-def]
    """(question, claim, twin, alternatives, is a key point) for every claim with a twin."""
    for q in bank:
        if split and split_of(q.id) != split:
            continue
        for kp in q.key_points:
            if kp.twin:
                yield q, kp.text, kp.twin, kp.alternatives, True
        for m in q.rubric.misconceptions:
            if m.twin:
                yield q, m.text, m.twin, m.alternatives, False


def test_every_misconception_and_core_point_has_a_twin_that_differs_by_more_than_a_negation(bank) -> None:  # type: ignore[no-untyped-def]
    for q in bank:
        for item in [*(kp for kp in q.key_points if kp.core), *q.rubric.misconceptions]:
            assert item.twin, f"{q.id}: {item.text!r} has no twin"
            assert item.twin != item.text, q.id
    plain = lambda s: " ".join(NEGATORS.sub(" ", s.lower()).split())  # noqa: E731
    negation_only = [t for _, t, w, _, _ in claims(bank) if plain(t) == plain(w)]
    assert len(negation_only) <= 5, negation_only  # a twin is a substantive minimal edit


def test_the_written_training_sentences_belong_to_calibration_claims_only(bank) -> None:  # type: ignore[no-untyped-def]
    """`evals/polarity/written.jsonl` trains a reader (`evals/train_polarity.py --written`, an
    experiment): it must never touch the held-out split, and each row must still name its
    claim as the rubric words it."""
    path = Path(__file__).resolve().parents[1] / "evals" / "polarity" / "written.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 600
    for row in rows:
        q = bank.get(row["question_id"])
        assert split_of(q.id) == "calibration", row["question_id"]
        items = q.key_points if row["kind"] == "key_point" else q.rubric.misconceptions
        claim = items[row["index"]]
        assert claim.text == row["claim"], (q.id, row["index"])
        assert len(row["states"]) == 3 and len(row["contradicts"]) == 3, (q.id, row["index"])
        for sentence in [*row["states"], *(c["sentence"] for c in row["contradicts"])]:
            assert sentence not in (claim.text, claim.twin), (q.id, sentence)
        errors = {c["error"] for c in row["contradicts"]}
        assert errors <= {"reversed-direction", "swapped-roles", "wrong-entity", "wrong-number",
                          "over-general", "wrong-mechanism"}, errors  # fmt: skip


def test_every_core_point_has_three_more_wrong_versions_for_the_probe_reading(bank) -> None:  # type: ignore[no-untyped-def]
    """`evals/polarity/wrong_versions.jsonl` (read by `evals/polarity_probe.py --all-twins`):
    each names its core point as the rubric words it and says it wrong three new ways."""
    path = Path(__file__).resolve().parents[1] / "evals" / "polarity" / "wrong_versions.jsonl"
    rows = {
        (r["question_id"], r["index"]): r
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
    }
    for q in bank:
        for i, kp in enumerate(q.key_points):
            if not kp.core:
                continue
            row = rows.get((q.id, i))
            assert row and row["key_point"] == kp.text, (q.id, i)
            texts = [w["text"] for w in row["wrong"]]
            assert len(set(texts)) == 3, (q.id, i)
            assert not {t.lower() for t in texts} & {kp.text.lower(), kp.twin.lower()}, (q.id, i)


def test_the_shipped_adapters_are_small_and_present() -> None:
    reader = polarity_reader()
    assert reader.available, (
        "interviewer/models/polarity.safetensors is missing: run evals/train_polarity.py --final"
    )
    assert reader.adapter.stat().st_size < 5_000_000


@pytest.mark.slow
def test_the_reader_tells_held_out_claims_from_their_twins(bank) -> None:  # type: ignore[no-untyped-def]
    """Never trained on: the held-out split's rubric twins (floors below the measured 0.9+)."""
    rows = list(claims(bank, "held-out"))
    reader = polarity_reader(threads=load_settings().embedding_threads)
    against_twin = reader.read([(t, w) for _, t, w, _, _ in rows])
    with_alternative = reader.read([(t, alts[0]) for _, t, _, alts, _ in rows if alts])
    contradicted = sum(r.contradicts > r.states for r in against_twin) / len(against_twin)
    stated = sum(r.states > r.contradicts for r in with_alternative) / len(with_alternative)
    assert contradicted >= 0.85, contradicted
    assert stated >= 0.75, stated
    # deterministic: the same pair reads the same alone and in a batch
    alone = reader.read([(rows[0][1], rows[0][2])])[0]
    assert abs(alone.contradicts - against_twin[0].contradicts) < 1e-4


@pytest.fixture(scope="module")
def grader(built_index) -> RubricGrader:  # type: ignore[no-untyped-def]
    return RubricGrader(load_settings(home=built_index))  # the bank's rubric vectors already built


def test_a_right_point_is_never_graded_below_its_reversed_twin_across_the_held_out_split(
    bank, grader
) -> None:  # type: ignore[no-untyped-def]
    """Bank-wide minimal pairs: 'I'd say <core point>.' against 'I'd say <its wrong twin>.'

    A regression floor, not the target: `rubric-19` (to `rubric-21`) scores the right member higher in only
    37 of 224 pairs (most tie: one point of several is a low grade either way) and the
    wrong member lower or equal in all but a few. The issue's target (90 % higher) is
    missed; README "Known weaknesses" has the figures."""
    pairs = [(q, t, w) for q, t, w, _, point in claims(bank, "held-out") if point][::2]  # 112 of 224
    higher = lower = passing = 0
    for q, right, wrong in pairs:
        r, w = grader.grade(q, f"I'd say {right}."), grader.grade(q, f"I'd say {wrong}.")
        higher += r.score > w.score
        lower += r.score < w.score
        passing += w.score >= 2.5
    assert higher / len(pairs) >= 0.13, higher / len(pairs)
    assert lower / len(pairs) <= 0.08, lower / len(pairs)
    assert passing / len(pairs) <= 0.2, passing / len(pairs)  # measured 37 of all 224


def test_the_issues_example_is_named_and_corrected(bank, grader) -> None:  # type: ignore[no-untyped-def]
    """`rubric-21` reads "B, not A" against the point "A, not B" by its order (`grading/order.py`);
    before it both members scored 1.5 and neither named the claim."""
    q = bank.get("002-20")
    wrong = "A gradient norm dropping to about zero is usually convergence, not vanishing gradients."
    right = "A gradient norm dropping to about zero is usually vanishing gradients, not convergence."
    bad, good = grader.grade(q, wrong), grader.grade(q, right)
    assert good.score > bad.score
    assert bad.misconceptions, bad
    named = bad.misconceptions[0]
    assert "convergence" in named.evidence and named.correction
    assert "vanishing gradients, not convergence" in bad.feedback
    assert not good.misconceptions


def test_a_swapped_contrast_inside_a_full_answer_loses_its_point_and_is_named(bank, grader) -> None:  # type: ignore[no-untyped-def]
    q = bank.get("000-06")  # point: "Evaluate and serve the EMA weights, not the final-step weights"
    said = "You then evaluate and serve the EMA weights, not the final-step weights."
    swapped = "You then evaluate and serve the final-step weights, not the EMA weights."
    assert said in q.reference
    right, wrong = grader.grade(q, q.reference), grader.grade(q, q.reference.replace(said, swapped))
    point = next(i for i, kp in enumerate(q.key_points) if kp.text.startswith("Evaluate and serve"))
    assert right.key_points[point].status == "covered" and not right.misconceptions
    assert wrong.key_points[point].status == "missed"
    (named,) = wrong.misconceptions
    assert named.evidence == swapped and named.correction == q.key_points[point].text
    assert wrong.score < right.score


def test_a_grade_reads_a_claims_polarity_only_where_the_reading_could_change_what_it_tells(
    bank, grader, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """`grade` skips the polarity reads when the answer read the most favourable and the least
    favourable way gets the same grade (`RubricGrader._reads_matter`): the grade must then be
    the one reading every claim gives (`analyze` reads them all), score, statuses, evidence,
    named claims, feedback and follow-up alike. Measured over every eval, probe and reference
    text (2,306): no difference, four reads in five skipped."""
    answers = [a for a in load_answers(split="calibration")][::6]
    reads = 0
    read = grader.polarity.read

    def counting(pairs):  # type: ignore[no-untyped-def]
        nonlocal reads
        reads += 1
        return read(pairs)

    monkeypatch.setattr(grader.polarity, "read", counting)
    skipped = 0
    for a in answers:
        q = bank.get(a.question_id)
        full = grader.decide(q, grader.analyze(q, a.answer))  # reads every chosen claim
        before = reads
        lazy = grader.grade(q, a.answer)
        skipped += reads == before
        assert same_outcome(lazy, full), (a.id, lazy.score, full.score)
    assert skipped >= len(answers) // 2, skipped  # most grades skip the reads
    assert skipped < len(answers)  # and some read
