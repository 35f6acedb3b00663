"""What every grader's `Grade` says besides its score: short feedback (what was good, what
is missing, what was wrong), the key point to follow up on, and the latency. Graders decide
credit; this module only words it."""

from __future__ import annotations

import re
import time

from interviewer.grading.grade import (
    ATTEMPT_FLAG,
    INJECTION_FLAG,
    Grade,
    KeyPointResult,
    MisconceptionResult,
    NumericCheck,
    Provenance,
)
from interviewer.grading.text import content_stems

QUOTE_WORDS = 16  # the longest quote of the candidate's own words in the feedback
# A reference sentence sets a wrong claim right when it says at least this share of the
# correction's content words ("The fix is lowering the learning rate …" for "fix it by
# lowering the learning rate").
CORRECTION_SHARE = 0.6


def build_grade(
    score: float,
    results: list[KeyPointResult],
    stated: list[MisconceptionResult],
    numeric: NumericCheck | None,
    flags: list[str],
    provenance: Provenance,
    t0: float,
    injection_cap: float = 5.0,
    reference: str = "",
    claim_cap: float | None = None,
) -> Grade:
    """The Grade with its feedback, follow-up point and latency (shared by every grader).
    `reference` is the question's reference answer: the feedback says what was missed in its words."""
    return Grade(
        score=score,
        key_points=results,
        misconceptions=stated,
        numeric=numeric,
        flags=flags,
        feedback=write_feedback(results, stated, numeric, flags, injection_cap, reference, claim_cap),
        follow_up=pick_follow_up(results),
        grader=provenance,
        latency_ms=round((time.perf_counter() - t0) * 1000, 2),
    )


def pick_follow_up(results: list[KeyPointResult]) -> str | None:
    """The weakest core point not covered (lowest credit); None when all core points are covered."""
    open_points = [r for r in results if r.core and r.status != "covered"]
    if not open_points:
        return None
    return min(open_points, key=lambda r: r.confidence).text


def _quote(text: str) -> str:
    words = text.strip().rstrip(".,;:").split()
    return " ".join(words[:QUOTE_WORDS]) + (" …" if len(words) > QUOTE_WORDS else "")


def reference_sentence(reference: str, point: str) -> str:
    """The sentence of the reference answer that says most of `point` ("" when none shares a word).

    >>> reference_sentence("Warm up first. Then clip the gradient norm at 1.0.", "clip gradient norms")
    'Then clip the gradient norm at 1.0.'
    >>> reference_sentence("- Warm up first.\\n- Clip the gradient norm at 1.0", "clip gradient norms")
    'Clip the gradient norm at 1.0.'
    """
    wanted = set(content_stems(point))
    best, share = "", 0.0
    # sentences, and the bullets of a reference written as a list (without their markers)
    for sentence in re.split(r"(?<=[.!?])\s+|\n+\s*(?:[-*•]\s+)?", reference.strip()):
        got = len(wanted & set(content_stems(sentence))) / max(len(wanted), 1)
        if got > share:
            best, share = sentence.strip().lstrip("-*• ").strip(), got
    return best if not best or best[-1] in ".!?" else best + "."


def _continuing(claim: str, reference: str) -> str:
    """A rubric claim to follow "but": its first word in lower case where that word is an
    ordinary one (the reference answer writes it in lower case), so "Evaluate and serve"
    becomes "evaluate and serve" while "Adam", "LAMB" or "E4M3" stay as they are.

    >>> _continuing("Evaluate and serve the EMA weights", "You then evaluate and serve them.")
    'evaluate and serve the EMA weights'
    >>> _continuing("Adam combines momentum with RMSProp", "Adam keeps two moments.")
    'Adam combines momentum with RMSProp'
    """
    first = claim.split(" ", 1)[0]
    ordinary = (
        first[:1].isupper()
        and first[1:].islower()
        and re.search(rf"\b{re.escape(first.lower())}\b", reference)
    )
    return first.lower() + claim[len(first) :] if ordinary else claim


def _set_right(m: MisconceptionResult, reference: str) -> tuple[str, str]:
    """(the wrong claim quoted, what sets it right): in the sentence of the reference answer that
    says the correction, where one says most of it; else in the rubric's words."""
    quote = m.evidence.strip().rstrip(".")
    said = f"You said “{quote}”" if quote else "The answer claims that " + m.text
    if not m.correction:
        return said, f": that is wrong ({m.text})."
    right = reference_sentence(reference, m.correction) if reference else ""
    wanted = set(content_stems(m.correction))
    if right and len(wanted & set(content_stems(right))) >= CORRECTION_SHARE * len(wanted):
        return said, f" — that's not right. {right}"
    # the rubric's words are a note ("scale the learning rate linearly with batch size"),
    # which reads as the right claim after a colon, not as a clause after "but"
    return said, f" — that's not right: {_continuing(m.correction, reference).rstrip('.')}."


def _corrections(stated: list[MisconceptionResult], reference: str) -> list[str]:
    """The first two wrong claims set right; two that one sentence sets right are quoted together,
    not set right twice.

    >>> m = MisconceptionResult(text="fix it by raising the learning rate",
    ...     evidence="The fix is raising the learning rate.", correction="fix it by lowering the learning rate")
    >>> _corrections([m], "It is the edge of stability. The fix is lowering the learning rate.")
    ["You said “The fix is raising the learning rate” — that's not right. The fix is lowering the learning rate."]
    >>> _corrections([m], "")
    ["You said “The fix is raising the learning rate” — that's not right: fix it by lowering the learning rate."]
    >>> again = MisconceptionResult(text=m.text, evidence="Raise it.", correction=m.correction)
    >>> _corrections([m, again], "It is the edge of stability. The fix is lowering the learning rate.")
    ["You said “The fix is raising the learning rate” and “Raise it” — that's not right. The fix is lowering the learning rate."]
    """
    halves = [_set_right(m, reference) for m in stated[:2]]
    if len(halves) == 2 and halves[0][1] == halves[1][1] and halves[1][0].startswith("You said "):
        return [f"{halves[0][0]} and {halves[1][0].removeprefix('You said ')}{halves[0][1]}"]
    return [said + right for said, right in halves]


def _overlaps(quote: str, wrong: str) -> bool:
    """Whether one text holds the other (a clause quoted from a sentence, or the sentence)."""
    return bool(quote) and (quote in wrong or wrong in quote)


def write_feedback(
    results: list[KeyPointResult],
    stated: list[MisconceptionResult],
    numeric: NumericCheck | None,
    flags: list[str],
    injection_cap: float = 5.0,
    reference: str = "",
    claim_cap: float | None = None,
) -> str:
    """A short debrief in sentences: what the answer got right (in its own words), what it
    missed (in the reference answer's words, which say why it matters), and the wrong claim
    set right. The rubric texts are the grade's evidence panel, not this prose."""
    if "empty" in flags or "no-answer" in flags:
        return "No answer to grade. Try saying what you do know — partial answers earn partial credit."
    if "not-english" in flags:
        return "The answer is not in English; this interview is graded in English. Please answer in English."
    if "gibberish" in flags:
        return "That does not read as an answer. Answer in plain sentences."
    if "off-topic" in flags:
        return "The answer does not address this question. Re-read it and answer what it asks."
    parts = []
    covered = [r for r in results if r.status == "covered"]
    core = [r for r in results if r.core]
    missed = [r for r in core if r.status == "missed"]
    partial = [r for r in results if r.status == "partial"]
    if covered:
        # quoted as an example of what was right: not a sentence that is set right below, nor
        # a part of one ("it keeps more mantissa bits than FP16" of "BF16 is the more precise
        # format: it keeps more mantissa bits than FP16")
        wrong = [m.evidence.strip(" .") for m in stated[:2] if m.evidence.strip(" .")]
        example = next(
            (r.evidence for r in covered if not any(_overlaps(r.evidence.strip(" ."), w) for w in wrong)), ""
        )
        quote = _quote(example)
        said = f", for instance when you said “{quote}”" if quote else ""
        n_core = sum(r.core for r in covered)
        if not n_core:
            parts.append(f"You made a good supporting point{said}.")
        elif len(core) == 1:
            parts.append(f"You got the core point{said}.")
        elif n_core == len(core):
            parts.append(f"You got all {len(core)} core points{said}.")
        else:
            parts.append(f"You got {n_core} of the {len(core)} core points{said}.")
    if partial:
        parts.append(
            "You came close on "
            + ("one more point" if len(partial) == 1 else f"{len(partial)} more points")
            + " without saying it outright."
        )
    # a wrong claim is set right in the reference answer's words where one of its sentences
    # says the correction ("… — that's not right. The fix is lowering the learning rate …")
    corrections = _corrections(stated, reference)
    # a point the answer said the wrong way round is set right there, not listed as missing too
    # (also when the correction words it a little differently: "FP8 training needs per-tensor
    # scaling factors" sets right the point "FP8 needs per-tensor scaling factors")
    corrected = [set(content_stems(m.correction)) for m in stated if m.correction]
    missed = [r for r in missed if not any(set(content_stems(r.text)) <= c for c in corrected)]
    if missed:
        why = [reference_sentence(reference, r.text) for r in missed[:2]] if reference else []
        why = [
            w for n, w in enumerate(why) if w and w not in why[:n] and not any(w in c for c in corrections)
        ]
        if why:
            parts.append("What was missing: " + " ".join(why))
        elif not reference:
            parts.append(
                "It missed " + ("one core point" if len(missed) == 1 else f"{len(missed)} core points")
                + "; the points below say which."
            )  # fmt: skip
    parts += corrections
    if claim_cap is not None and corrections:
        parts.append(f"A wrong claim said outright holds the grade to {claim_cap:g} at most.")
    if numeric is not None and numeric.verdict != "correct":
        unit = f" {numeric.unit}" if numeric.unit else ""
        said = f"you said {numeric.found_text}" if numeric.found_text else "no number given"
        if numeric.restated:
            said = f"you gave only the question's own {numeric.found_text}"
        parts.append(f"The number should be {numeric.target:g}{unit} ({said}).")
    if ATTEMPT_FLAG in flags:
        parts.append(
            "The answer is on the topic but states no key point clearly enough to earn credit;"
            " it scores the minimum for a relevant attempt."
        )
    if INJECTION_FLAG in flags:
        capped = (
            f"; an answer that contains them scores at most {injection_cap:g}" if injection_cap < 5 else ""
        )
        parts.append(f"Instructions addressed to the grader were ignored{capped}.")
    return " ".join(parts) or "A complete answer."
