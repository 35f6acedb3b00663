"""Grade labelled answers that no calibration has seen, with the shipped grader.

    python evals/probe.py FILE.jsonl [--json] [--verify BACKEND] [--claim-reader MODEL]

FILE holds eval-set records (`question_id`, `answer`, `expert_score`, `misconceptions`,
as in `evals/answers/`) kept out of `evals/answers/` so that `calibrate.py` never fits on
them. `evals/probes/misconceptions-new-writers.jsonl` holds 78 confident-misconception
answers to calibration-split questions, written after the calibration by writers who
had not written its answers: it measures how well misconception detection carries over
to new wordings. `evals/probes/new-questions.jsonl` holds the full answer sets (11 tiers
and 9 rewordings each, 120 answers) of six calibration-split bank questions that no
calibration has used, written after `rubric-11` was fitted: a fresh check of how the
fitted grader carries over to questions it has not seen.

Reports the mean grader-minus-expert score, the mean absolute error, how many labelled
misconceptions the grader flagged and, where the file has them, QWK against the expert,
tier ordering over the answers that are not rewordings, and paraphrase invariance (share
of rewordings, `paraphrase_of`, within half a point of the answer they reword).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from external import print_figures

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import (
    EvalAnswer,
    paraphrase_deltas,
    quadratic_weighted_kappa,
    tier_ordering,
)
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings

RIGHT_TIERS = {"strong", "model-paraphrase", "partial", "one-point", "paraphrase"}


def probe(path: Path, verify: str | None = None, claim_reader: str | None = None) -> dict[str, object]:
    settings = load_settings(verify=verify, claim_reader=claim_reader)
    bank = load_bank(settings)
    grader = RubricGrader(settings)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    answers = [EvalAnswer.model_validate_json(line) for line in lines]
    diffs, labelled, flagged, false_alarms = [], 0, 0, 0
    any_named = right_named = right_answers = 0
    scores: dict[str, float] = {}
    for a in answers:
        question = bank.get(a.question_id)
        grade = grader.grade(question, a.answer)
        scores[a.id] = grade.score
        diffs.append(grade.score - a.expert_score)
        said = {m.text for m in grade.misconceptions}
        wanted = {question.rubric.misconceptions[i].text for i in a.misconceptions}
        labelled += len(wanted)
        flagged += len(wanted & said)
        false_alarms += len(said - wanted)
        # a wrong claim named at all (a listed misconception, or a key point said the wrong way round)
        any_named += bool(wanted) and bool(grade.misconceptions)
        right_named += not wanted and a.tier in RIGHT_TIERS and bool(grade.misconceptions)
        right_answers += not wanted and a.tier in RIGHT_TIERS
    return {
        "file": str(path),
        "answers": len(answers),
        "mean_grader_minus_expert": round(float(np.mean(diffs)), 3) if diffs else None,
        "mae": round(float(np.mean(np.abs(diffs))), 3) if diffs else None,
        "misconceptions_labelled": labelled,
        "misconceptions_flagged": flagged,
        "other_misconceptions_flagged": false_alarms,
        "answers_with_a_labelled_misconception_naming_a_wrong_claim": any_named,
        "right_answers_naming_a_wrong_claim": f"{right_named}/{right_answers}",
        **agreement(answers, scores),
    }


def agreement(answers: list[EvalAnswer], scores: dict[str, float]) -> dict[str, object]:
    """QWK, tier ordering and paraphrase invariance, each where the file can give it."""
    out: dict[str, object] = {}
    if len({a.expert_score for a in answers}) > 1:
        got = [scores[a.id] for a in answers]
        out["qwk"] = round(quadratic_weighted_kappa([a.expert_score for a in answers], got), 3)
    ordering = tier_ordering([(a, scores[a.id]) for a in answers if a.paraphrase_of is None])
    if not math.isnan(ordering):
        out["tier_ordering"] = round(ordering, 3)
    deltas = paraphrase_deltas(answers, scores)
    if deltas:
        out["paraphrase_invariance"] = round(float(np.mean([d <= 0.5 for d in deltas])), 3)
        out["paraphrase_pairs"] = len(deltas)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--verify", metavar="BACKEND", help="with the grader's second reader (an LLM backend)"
    )
    parser.add_argument(
        "--claim-reader", metavar="MODEL", help="with the grader's claim reader (e.g. smollm2)"
    )
    args = parser.parse_args()
    if not args.jsonl.is_file():
        print(f"error: {args.jsonl} not found; give a JSONL of labelled answers", file=sys.stderr)
        return 2
    try:
        result = probe(args.jsonl, args.verify, args.claim_reader)
    except (ValueError, KeyError, IndexError) as exc:
        print(f"error: {args.jsonl}: {exc}", file=sys.stderr)
        return 2
    print_figures(result, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
