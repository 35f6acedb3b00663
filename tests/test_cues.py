"""The cue lists are data (`interviewer/cues.yaml`): every example it gives is a test.

A cue added to the file comes with the sentences it must catch (`match`) and must not
(`no_match`); this module turns each into a case, so the file and its tests cannot drift.
"""

from __future__ import annotations

import pytest

from interviewer import cues
from interviewer.grading import numbers, text
from interviewer.speech import transcription

CASES = [
    pytest.param(
        cue.name, example, should, id=f"{cue.name}:{'match' if should else 'no_match'}:{example[:40]}"
    )
    for cue in cues.cues().values()
    for examples, should in ((cue.match, True), (cue.no_match, False))
    for example in examples
]


@pytest.mark.parametrize(("name", "example", "should"), CASES)
def test_every_example_in_the_cue_file_reads_as_it_says(name: str, example: str, should: bool) -> None:
    assert bool(cues.pattern(name).search(example)) is should


def test_every_cue_says_what_it_is_for_and_gives_examples_both_ways() -> None:
    for cue in cues.cues().values():
        assert cue.about and cue.match and cue.no_match, cue.name


def test_grading_and_speech_read_the_same_compiled_cues() -> None:
    assert text.NEGATION is cues.pattern("negation") and text.INJECTION is cues.pattern("injection")
    assert numbers._CORRECTION is cues.pattern("number_correction")
    assert cues.stopwords() == text.STOPWORDS and "the" in text.STOPWORDS
    kinds, spellings = cues.speech_fillers()
    assert kinds == transcription.FILLERS and spellings["umm"] == "um"


def test_an_unknown_cue_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="negation"):
        cues.pattern("negatoin")
