"""The interview script (corpus/script): what the interviewer says for every bank question,
checked mechanically against what it must not say.

The leak score of a line against a text it must not give away is the IDF-weighted share
of that text's content words, the question's own words left out, that the line says
(`phrasing.leak_score`, the grader's own lexical overlap; IDF over the bank's references
and questions). `phrasing.LEAK_BOUND` is 0.25: a line may share a word or two of little weight
("training", "loss"), not the substance. The writers ran the same check on their drafts:
their first versions had lines above the bound ("averaging" in a challenge whose right
answer is an average), each one rewritten, then every line was read for leaks in other words.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from interviewer.corpus.bank import Bank, load_bank, load_bundled
from interviewer.errors import BankError
from interviewer.grading.text import IDF
from interviewer.interview.phrasing import LEAK_BOUND, leak_score
from interviewer.settings import Settings, load_settings

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(load_settings())


@pytest.fixture(scope="module")
def idf(bank: Bank) -> IDF:
    return IDF([q.reference for q in bank] + [q.question for q in bank])


leak = leak_score  # the same check an LLM's wording of a follow-up must pass


def test_every_bank_question_has_a_script(bank: Bank) -> None:
    assert len(bank) == 132
    for q in bank:
        assert q.ask.strip().endswith("?"), q.id
        assert 2 <= len(q.hints) <= 3, q.id
        assert all(kp.probe for kp in q.key_points), q.id
        assert all(m.challenge for m in q.rubric.misconceptions), q.id


def test_ask_keeps_every_number_of_the_question(bank: Bank) -> None:
    for q in bank:
        said = NUMBER.findall(q.ask)
        assert all(n in said for n in NUMBER.findall(q.question)), (q.id, q.question, q.ask)


def test_probes_are_short_questions_that_do_not_state_their_point(bank: Bank, idf: IDF) -> None:
    for q in bank:
        for kp in q.key_points:
            assert kp.probe.strip().endswith("?") and len(kp.probe.split()) <= 30, (q.id, kp.probe)
            assert leak(idf, kp.text, kp.probe, q.question) <= LEAK_BOUND, (q.id, kp.text, kp.probe)


def test_challenges_push_back_without_the_right_answer(bank: Bank, idf: IDF) -> None:
    for q in bank:
        core = [kp.text for kp in q.key_points if kp.core]
        for m in q.rubric.misconceptions:
            for secret in [m.twin, *core] if m.twin else core:
                assert leak(idf, secret, m.challenge, q.question) <= LEAK_BOUND, (q.id, secret, m.challenge)


def test_hints_point_where_to_look_not_at_the_words_of_any_point(bank: Bank, idf: IDF) -> None:
    for q in bank:
        for hint in q.hints:
            for kp in q.key_points:
                assert leak(idf, kp.text, hint, q.question) <= LEAK_BOUND, (q.id, kp.text, hint)


def test_the_leak_score_catches_a_line_that_states_its_point(idf: IDF) -> None:
    point = "gradient clipping is missing or not actually enabled"
    assert (
        leak(idf, point, "Was gradient clipping actually enabled?", "What causes loss spikes?") > LEAK_BOUND
    )
    assert leak(idf, point, "What guard rails did the run have?", "What causes loss spikes?") <= LEAK_BOUND


def _corpus_with_script(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "corpus"
    for part in ("sources", "rubrics"):
        (corpus / part).mkdir(parents=True)
        for f in (ROOT / "corpus" / part).iterdir():
            (corpus / part / f.name).write_bytes(f.read_bytes())
    (corpus / "script").mkdir()
    raw = yaml.safe_load((ROOT / "corpus" / "script" / "002.yaml").read_text(encoding="utf-8"))
    edit(raw)
    (corpus / "script" / "002.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return corpus


def test_a_probe_for_a_point_the_rubric_does_not_have_names_the_file_and_field(tmp_path: Path) -> None:
    def edit(raw: dict) -> None:  # type: ignore[type-arg]
        raw["questions"]["002-03"]["probes"][1]["point"] = "something else"

    corpus = _corpus_with_script(tmp_path, edit)
    with pytest.raises(BankError, match=r"002\.yaml: questions\.'002-03'\.probes\[1\]: 'something else'"):
        load_bundled(corpus)


def test_a_script_entry_without_hints_is_a_clear_error(tmp_path: Path) -> None:
    def edit(raw: dict) -> None:  # type: ignore[type-arg]
        raw["questions"]["002-01"]["hints"] = []

    corpus = _corpus_with_script(tmp_path, edit)
    with pytest.raises(BankError, match=r"002\.yaml: questions\.002-01\.hints"):
        load_bundled(corpus)


def test_questions_json_carries_the_script(settings: Settings) -> None:
    q = load_bank(settings).get("002-29").to_public_json()
    assert q["ask"] and q["hints"]
    assert all(kp["probe"] for kp in q["key_points"])  # type: ignore[attr-defined]
