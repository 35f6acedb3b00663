"""How well the calibration generalises, measured inside the calibration split.

    python evals/crossval.py [--folds 4] [--repeats 1]

The calibration split's questions are cut into folds; `calibrate.fit` is run
on all folds but one and the grader is scored on the questions it did not see.
The out-of-fold figures predict the held-out split's without looking at it,
so grader changes are judged here, never on the held-out split. With
`--repeats N` the questions are dealt into folds N different ways and the
figures averaged: one dealing moves them by about ±0.01.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict

import numpy as np
from calibrate import analyse, fit

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import EvalAnswer, load_answers, quadratic_weighted_kappa, tier_ordering
from interviewer.grading.decision import Analysis, decide
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import Settings, load_settings


def out_of_fold(
    settings: Settings, grader: RubricGrader, answers: list[EvalAnswer], analyses: list[Analysis],
    folds: int, seed: int,
) -> dict[str, float]:  # fmt: skip
    """Every answer's score from a calibration fitted without its question."""
    bank = load_bank(settings)
    questions = sorted({a.question_id for a in answers})
    if seed:
        random.Random(seed).shuffle(questions)
    fold_of = {q: i % folds for i, q in enumerate(questions)}
    scores: dict[str, float] = {}
    for k in range(folds):
        train = [i for i, a in enumerate(answers) if fold_of[a.question_id] != k]
        cal = fit(settings, grader, [answers[i] for i in train], [analyses[i] for i in train], free=False)
        for a, an in zip(answers, analyses, strict=True):
            if fold_of[a.question_id] == k:
                scores[a.id] = decide(bank.get(a.question_id), an, cal).score
    return scores


def figures(answers: list[EvalAnswer], scores: dict[str, float]) -> dict[str, object]:
    got = [scores[a.id] for a in answers]
    expert = [a.expert_score for a in answers]
    tier_of = {a.id: a.tier for a in answers}
    pairs = defaultdict(list)
    for a in answers:
        if a.paraphrase_of in scores:
            kind = (
                "" if a.id.endswith("/paraphrase") else " (heavy set)" if "/heavy" in a.id else " (extra set)"
            )
            pairs[tier_of[a.paraphrase_of] + kind].append(abs(scores[a.id] - scores[a.paraphrase_of]) <= 0.5)
    bias = defaultdict(list)
    for a, s in zip(answers, got, strict=True):
        bias[a.tier].append(s - a.expert_score)
    return {
        "qwk": quadratic_weighted_kappa(expert, got),
        "tier_ordering": tier_ordering([(a, scores[a.id]) for a in answers]),
        "paraphrase_invariance": float(np.mean([x for v in pairs.values() for x in v])),
        "paraphrase_by_tier": {t: float(np.mean(v)) for t, v in sorted(pairs.items())},
        "bias_by_tier": {t: float(np.mean(v)) for t, v in sorted(bias.items())},
    }


def mean(runs: list[dict[str, object]]) -> dict[str, object]:
    """Figures averaged over runs (nested dicts key by key)."""
    out: dict[str, object] = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            out[key] = {k: round(float(np.mean([r[key][k] for r in runs])), 3) for k in value}  # type: ignore[index]
        else:
            out[key] = round(float(np.mean([r[key] for r in runs])), 3)  # type: ignore[arg-type]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1, help="deal the questions into folds this many ways")
    args = parser.parse_args()
    settings = load_settings()
    answers = load_answers(split="calibration")
    grader, analyses = analyse(settings, answers)
    runs = [
        figures(answers, out_of_fold(settings, grader, answers, analyses, args.folds, seed))
        for seed in range(args.repeats)
    ]
    print(json.dumps({"folds": args.folds, "repeats": args.repeats, **mean(runs)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
