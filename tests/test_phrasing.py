"""What the interviewer says around the script: reactions, challenges, hints, and the open
follow-ups of a user's own question, which has no script and whose points are never quoted."""

from __future__ import annotations

from interviewer.corpus.bank import make_user_question
from interviewer.interview import prompts
from interviewer.interview.phrasing import challenge_line, hint_text, reaction, template_follow_up

USER_Q = make_user_question(
    "Why do we warm up the learning rate?",
    "Adam's second-moment estimates are unreliable in the first steps. A warmup keeps early updates small.",
)


def _points(*statuses: str) -> list[dict]:  # type: ignore[type-arg]
    return [{"text": f"point {i}", "core": True, "status": s, "evidence": "", "confidence": 0.0}
            for i, s in enumerate(statuses)]  # fmt: skip


def test_a_reaction_names_what_the_answer_got_right() -> None:
    assert reaction(_points("missed", "covered"), []) == "You're right about one thing: point 1."  # type: ignore[arg-type]
    assert reaction(_points("missed"), []) == prompts.REACT_NOTHING  # type: ignore[arg-type]
    assert reaction(_points("covered"), [{"text": "x"}]) == prompts.REACT_WRONG  # type: ignore[arg-type]


def test_a_user_question_gets_open_follow_ups_that_never_quote_its_points() -> None:
    for number in (1, 2):
        line = template_follow_up(USER_Q, 0, number)
        assert line in (prompts.FOLLOW_UP_OPEN, prompts.FOLLOW_UP_OPEN_NEXT)
        for kp in USER_Q.key_points:
            assert " ".join(kp.text.split()[:2]) not in line


def test_a_user_question_hints_count_the_points_then_stop() -> None:
    said = [hint_text(USER_Q, None, n, []) for n in range(3)]
    assert said[0] == prompts.HINT_COUNT.format(n_core=len(USER_Q.key_points))
    assert said[1] == prompts.HINT_OPEN and said[2] == prompts.HINT_NONE


def test_a_wrong_claim_without_a_scripted_challenge_is_questioned_in_the_candidates_words() -> None:
    line = challenge_line(USER_Q, {"text": "warmup is for BatchNorm", "evidence": "Warmup is for BatchNorm."})
    assert line == prompts.CHALLENGE.format(quote="Warmup is for BatchNorm")
