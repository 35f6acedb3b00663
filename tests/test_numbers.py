"""Numbers in answers: spoken forms, units, tolerance."""

from __future__ import annotations

import pytest

from interviewer.corpus.schema import NumericTarget
from interviewer.grading.numbers import check_numeric, extract_quantities, words_to_digits


@pytest.mark.parametrize(
    ("spoken", "digits"),
    [
        ("two point three", "2.3"),
        ("seven point five e minus five", "7.5e-5"),
        ("sixteen million seven hundred eighty one thousand three hundred twelve", "16781312"),
        ("Sixteen million, seven hundred eighty-one thousand, three hundred twelve", "16781312"),
        ("a hundred and twelve", "112"),
        ("ten to the minus eight", "1e-8"),
        ("41 point six seven", "41.67"),
        ("three, four", "3, 4"),  # a list, not 34 or 7
        ("a batch of two fifty six", "a batch of 256"),  # not 2 + 50 + 6
        ("one twenty eight or five twelve", "128 or 512"),
        ("four zero nine six", "4096"),
        ("one zero two four", "1024"),  # a digit read out: "zero two" is ZeRO-2 only alone
        ("Explain the three ZeRO stages", "Explain the 3 ZeRO stages"),
        ("one hundred and twelve", "112"),
        ("sixteen point seven eight million", "16780000"),
        ("point oh six two five", "0.0625"),
        ("zero point zero zero zero one five", "0.00015"),
        ("point one: the loss", "point 1: the loss"),  # a list item, not 0.1
        ("one over sixteen", "1/16"),
        ("two to the power of ten", "2^10"),
        ("warm up over one over ten steps", "warm up over 1 over 10 steps"),  # not a fraction
        ("seven and a half times ten to the minus five", "7.5e-5"),  # mixed numbers
        ("one and three quarters", "1.75"),
        ("one hundred and eleven and a half", "111.5"),
        ("seven point five times ten to the negative fifth", "7.5e-5"),  # ordinal exponents
        ("one point five e to the minus four", "1.5e-4"),
        ("three times ten to the four", "3e4"),
        ("between three and ten", "between 3 and 10"),  # two numbers, not 13
        ("twenty and thirty percent", "20 and 30 percent"),
        ("two thousand and five", "2005"),
    ],
)
def test_spoken_numbers_become_digits(spoken: str, digits: str) -> None:
    assert words_to_digits(spoken) == digits


def test_quantities_carry_multipliers_and_units() -> None:
    found = [(q.value, q.unit) for q in extract_quantities("7B params, 14 GB, 2,500 seconds, 4x, 10%")]
    assert found == [(7e9, "parameters"), (14.0, "GB"), (2500.0, "minutes"), (4.0, "x"), (10.0, "%")]


GB = NumericTarget(value=112, unit="GB", tolerance=1)
MINUTES = NumericTarget(value=41.67, unit="minutes", tolerance=0.5)
LR = NumericTarget(value=7.5e-5, unit="", tolerance=1e-6)
SHARE = NumericTarget(value=0.0625, unit="", tolerance=0.001)
BATCH = NumericTarget(value=512, unit="examples", tolerance=0)


@pytest.mark.parametrize(
    ("answer", "target", "verdict"),
    [
        ("about 112 GB before activations", GB, "correct"),
        ("a hundred and twelve gigabytes", GB, "correct"),
        ("roughly 104.3 GiB", GB, "correct"),  # 104.3 GiB = 112 GB
        ("112 GiB", GB, "incorrect"),  # 120 GB: the unit matters
        ("14 GB", GB, "incorrect"),
        ("it depends on the optimizer", GB, "missing"),
        ("2,500 seconds, so forty one point seven minutes", MINUTES, "correct"),
        ("2500 s", MINUTES, "correct"),  # converted to minutes
        ("25 minutes", MINUTES, "incorrect"),
        # written forms of one number are read as that number
        ("7.5 × 10^-5", LR, "correct"),
        ("7.5x10^-5", LR, "correct"),
        ("7.5 * 10**-5", LR, "correct"),
        ("7.5·10⁻⁵", LR, "correct"),  # superscripts
        ("7.5 × 10^−5", LR, "correct"),  # a typographic minus
        ("7.5 × 10^-4", LR, "incorrect"),
        ("seven and a half times ten to the minus five", LR, "correct"),
        ("seven and a half times ten to the minus four", LR, "incorrect"),
        ("one hundred and eleven and a half gigabytes", GB, "correct"),
        ("1/16 of the memory", SHARE, "correct"),
        ("one sixteenth", SHARE, "correct"),
        ("6.25 %", SHARE, "correct"),  # a percentage of a plain fraction
        ("1/8", SHARE, "incorrect"),
        ("41 minutes and 40 seconds", MINUTES, "correct"),  # one duration, not 41 and 40
        ("41m40s", MINUTES, "correct"),
        ("40 minutes and 41 seconds", MINUTES, "incorrect"),
        ("2^9 examples", BATCH, "correct"),
        ("2^8", BATCH, "incorrect"),
    ],
)
def test_numeric_check_reads_the_number_and_converts_units_within_tolerance(
    answer: str, target: NumericTarget, verdict: str
) -> None:
    assert check_numeric(answer, target).verdict == verdict


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("ZeRO-3 shards the parameters", "ZeRO-3 shards the parameters"),
        ("zero stage two", "zero stage 2"),
        ("stage one zero two shards the gradients", "stage 1 zero 2 shards the gradients"),
        ("zero offload moves them to the CPU", "zero offload moves them to the CPU"),
        ("zero-shot accuracy", "zero-shot accuracy"),
        ("decay it to zero", "decay it to 0"),  # a number where nothing names it
        ("zero point zero one", "0.01"),
    ],
)
def test_zero_that_names_something_stays_a_word(text: str, kept: str) -> None:
    """DeepSpeed's ZeRO is not the number 0: "ZeRO-3" read as "0-3" would agree with any
    claim about stage 0 and embed as a range."""
    assert words_to_digits(text) == kept


def test_identifiers_and_lists_are_not_read_as_fractions_or_powers() -> None:
    assert [q.value for q in extract_quantities("fp16/bf16 on 8 GPUs")] == [8.0]
    assert [q.value for q in extract_quantities("batch 1/16.5")] == [1.0, 16.5]


def test_a_fraction_answers_a_percentage() -> None:
    replay = NumericTarget(value=10, unit="%", tolerance=5)
    assert (
        check_numeric("roughly a tenth of every batch, the other 90% new data", replay).verdict == "correct"
    )
    assert check_numeric("one half of every batch", replay).verdict == "incorrect"


def test_spoken_fractions_and_gigs_are_quantities() -> None:
    found = [(q.value, q.unit) for q in extract_quantities("three quarters of it, a sixteenth, 16 gig")]
    assert found == [(0.75, ""), (0.0625, ""), (16.0, "GB")]
    assert extract_quantities("the first half of training") == []


def test_a_factor_may_be_said_in_words() -> None:
    speedup = NumericTarget(value=1.75, unit="x", tolerance=0.5)
    assert check_numeric("about twice as fast", speedup).verdict == "correct"
    assert check_numeric("it triples throughput", speedup).verdict == "incorrect"
    assert check_numeric("no real speedup", speedup).verdict == "missing"
    # only for a factor: "double it to ten percent" answers a percentage with its 10
    assert (
        check_numeric("double it to ten percent", NumericTarget(value=10, unit="%", tolerance=5)).found == 10
    )


@pytest.mark.parametrize(
    ("typed", "values"),
    [
        (r"$\eta = 7.5 \times 10^{-5}$", [7.5e-5]),
        (r"$3\cdot10^{-4}$", [3e-4]),
        (r"\(2^{10}\) tokens", [1024.0]),
        (r"$\tfrac{1}{16}$ of it", [0.0625]),
        (r"$16{,}781{,}312$ parameters", [16781312.0]),
        (r"$14\,\text{GB}$", [14.0]),
        (r"$\approx 10\%$", [10.0]),
    ],
)
def test_numbers_typed_as_tex_read_like_plain_ones(typed: str, values: list[float]) -> None:
    assert [q.value for q in extract_quantities(typed)] == pytest.approx(values)


def test_a_tex_answer_passes_the_numeric_check() -> None:
    """An answer that types its arithmetic in TeX was read as its last stray digits (2.0 cap)."""
    target = NumericTarget(value=7.5e-5, unit="", tolerance=5e-6)
    answer = r"at step 500 the rate is $\tfrac{500}{2000} \times 3 \times 10^{-4} = 7.5 \times 10^{-5}$"
    assert check_numeric(answer, target).verdict == "correct"
    params = NumericTarget(value=16781312, unit="parameters", tolerance=0)
    assert check_numeric(r"$4096 \times 4096 + 4096 = 16{,}781{,}312$ in total", params).verdict == "correct"


@pytest.mark.parametrize(
    ("typed", "values"),
    [
        ("16\u2009781\u2009312 parameters", [16781312.0]),  # thin spaces group the digits
        ("16\u202f781\u202f312 parameters", [16781312.0]),  # narrow no-break spaces
        ("2\u00a0048 tokens", [2048.0]),
        ("2 048 tokens", [2.0, 48.0]),  # plain spaces may separate two numbers: left alone
        ("1½ epochs", [1.5]),
        ("1 ½ GB", [1.5]),
        ("¾ of the memory", [0.75]),
        ("it keeps ⅛ of them", [0.125]),
        ("1⁄16 of it", [0.0625]),  # the fraction slash
        ("fp16 at ½ the cost", [0.5]),  # "fp16" is a name, not 16½
    ],
)
def test_typographic_numbers_read_like_plain_ones(typed: str, values: list[float]) -> None:
    assert [q.value for q in extract_quantities(typed)] == pytest.approx(values)


def test_every_numeric_reference_answer_passes_its_own_check() -> None:
    """A rubric whose own reference fails its numeric target caps every right answer."""
    from interviewer.corpus.bank import load_bank
    from interviewer.grading.text import clean
    from interviewer.settings import load_settings

    for q in load_bank(load_settings()):
        if q.rubric.numeric is not None:
            assert check_numeric(clean(q.reference), q.rubric.numeric).verdict == "correct", q.id


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Clipping caps the norm, so one bad batch cannot move the weights much.", "missing"),
        ("You compute one norm across all the parameters together.", "missing"),
        ("Cosine decay is a common one that people use a lot.", "missing"),
        ("I'd clip at one.", "correct"),
        ("A max norm of one, over all parameters.", "correct"),
        ("Set the max norm to one point oh.", "correct"),
        ("Maybe one or two.", "incorrect"),  # two numbers offered for one target
    ],
)
def test_one_as_a_determiner_states_no_number(answer: str, verdict: str) -> None:
    """ "one bad batch" and "the one that diverged" say no 1; "clip at one" does. Before,
    an off-topic sentence got the clip-value question's number point for its "one"."""
    from interviewer.grading.text import clean

    target = NumericTarget(value=1.0, unit="", tolerance=0.0)
    assert check_numeric(clean(answer, determiners=True), target).verdict == verdict


def test_a_number_restated_from_the_question_is_called_so_and_still_fails_the_check() -> None:
    """004-10 gives the batch sizes (256 to 1,024) and asks for the learning rate's factor: an
    answer that only restates 1,024 fails the check as before (its grade does not move), and the
    feedback says the number was the question's own rather than "you said 1024"."""
    from interviewer.corpus.bank import load_bank
    from interviewer.grading.feedback import write_feedback
    from interviewer.grading.rubric import screen_answer
    from interviewer.settings import load_settings

    question = load_bank(load_settings()).get("004-10")
    numeric = screen_answer(question, "Keep the learning rate the same when the batch grows to 1024.").numeric
    assert numeric is not None and (numeric.verdict, numeric.found_text, numeric.restated) == (
        "incorrect",
        "1024",
        True,
    )
    assert "you gave only the question's own 1024" in write_feedback([], [], numeric, [])
    other = screen_answer(question, "Multiply the learning rate by 2.").numeric
    assert other is not None and other.verdict == "incorrect" and not other.restated
    assert "(you said 2)" in write_feedback([], [], other, [])
