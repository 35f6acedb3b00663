"""Spoken numbers are read the way a listener hears them (no weights: fast).

The number the speaker finally commits to is the one checked: a number taken back ("no
sorry", "I mean", "wait"), started and said again in full, or said twice counts once, as
the last said; two numbers offered for one target are not credited with whichever fits.
"""

from __future__ import annotations

import pytest

from interviewer.corpus.schema import NumericTarget
from interviewer.grading.numbers import check_numeric
from interviewer.grading.text import clean

PEAK_LR = NumericTarget(value=7.5e-5, unit="", tolerance=1e-5)
RATIO = NumericTarget(value=2.303, unit="", tolerance=0.01)
WARMUP = NumericTarget(value=5000, unit="steps", tolerance=3000)
PARAMETERS = NumericTarget(value=16_781_312, unit="", tolerance=0)


def heard(answer: str, target: NumericTarget) -> tuple[str, str]:
    check = check_numeric(clean(answer), target)
    return check.verdict, check.found_text


def test_the_issues_two_spoken_answers_are_read_right() -> None:
    assert heard("two point three uh two point three zero three", RATIO)[0] == "correct"
    said = "it's linear from zero, and the peak, it's zero point seven no sorry seven point five e minus five"
    assert heard(said, PEAK_LR) == ("correct", "7.5e-5")


@pytest.mark.parametrize(
    "answer",
    [
        "the peak is seven point five e minus five, no sorry, zero point seven",
        "seven point five e minus five, wait, no, more like seven e minus four",
        "I'd say seven point five e minus five, I mean three e minus four",
        "seven point five e minus five, actually one e minus three",
    ],
)
def test_a_right_number_taken_back_for_a_wrong_one_is_wrong(answer: str) -> None:
    assert heard(answer, PEAK_LR)[0] == "incorrect"


@pytest.mark.parametrize(
    "answer",
    [
        "about one e minus four, sorry, seven point five e minus five",
        "three e minus four, I mean seven point five e minus five",
        "zero point seven, or rather seven point five e minus five",
    ],
)
def test_a_wrong_number_corrected_to_the_right_one_is_right(answer: str) -> None:
    assert heard(answer, PEAK_LR)[0] == "correct"


def test_a_number_said_twice_is_one_number() -> None:
    assert heard("five thousand, five thousand steps of warmup", WARMUP) == ("correct", "5000 steps")
    assert heard("um about five thousand steps, uh, five thousand", WARMUP)[0] == "correct"


def test_two_numbers_offered_for_one_target_are_not_credited() -> None:
    verdict, found = heard("maybe one e minus four or seven point five e minus five", PEAK_LR)
    assert verdict == "incorrect" and " or " in found


def test_a_number_restated_in_another_unit_is_no_hedge() -> None:
    minutes = NumericTarget(value=41.7, unit="minutes", tolerance=1)
    assert heard("about 41.7 minutes, or 2,500 s", minutes)[0] == "correct"


def test_words_that_only_sound_like_corrections_leave_the_number_alone() -> None:
    assert heard("it is actually seven point five e minus five", PEAK_LR)[0] == "correct"
    assert heard("I mean, the usual is five thousand steps", WARMUP)[0] == "correct"


@pytest.mark.parametrize(
    "answer",
    [
        "sixteen million seven, I mean, seven hundred eighty-one thousand three hundred twelve",
        "sixteen million seven uh seven hundred eighty one thousand three hundred twelve",
    ],
)
def test_a_number_whose_last_part_is_started_and_said_again_is_one_number(answer: str) -> None:
    """A listener hears 16,781,312, not 16,000,007 taken back for 781,312."""
    assert heard(answer, PARAMETERS)[0] == "correct"


def test_a_number_restarted_whole_after_a_correction_is_still_the_one_taken() -> None:
    said = "sixteen million seven, I mean, seventeen million"
    assert heard(said, NumericTarget(value=17_000_000, unit="", tolerance=0)) == ("correct", "17000000")


def test_a_word_under_twenty_after_ten_to_nineteen_starts_another_number() -> None:
    """ "log ten, two point three zero two six" says 10, then 2.3026: no number is read "ten two"."""
    assert heard("log ten two point three zero two six", RATIO)[0] == "correct"
    assert clean("ten twelve") == "10 12"
    assert clean("nineteen eighty four") == "1984"  # a year's reading stays one number
