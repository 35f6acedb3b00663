"""How well the calibration generalises, measured inside the calibration split.

    python evals/crossval.py [--folds 4]

The calibration split's questions are cut into folds; `calibrate.fit` is run
on all folds but one and the grader is scored on the questions it did not see.
The out-of-fold figures predict the held-out split's without looking at it,
so grader changes are judged here, never on the held-out split.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import numpy as np
from calibrate import analyse, fit

from interviewer.bank import load_bank
from interviewer.evaluation import load_answers, quadratic_weighted_kappa, tier_ordering
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=4)
    args = parser.parse_args()
    settings = load_settings()
    bank = load_bank(settings)
    answers = load_answers(split="calibration")
    grader, analyses = analyse(settings, answers)
    questions = sorted({a.question_id for a in answers})
    fold_of = {q: i % args.folds for i, q in enumerate(questions)}
    scores: dict[str, float] = {}
    for k in range(args.folds):
        train = [i for i, a in enumerate(answers) if fold_of[a.question_id] != k]
        cal = fit(settings, grader, [answers[i] for i in train], [analyses[i] for i in train], free=False)
        g = RubricGrader(settings, cal)
        g.embedder = grader.embedder
        for a, an in zip(answers, analyses, strict=True):
            if fold_of[a.question_id] == k:
                scores[a.id] = g.decide(bank.get(a.question_id), an).score
    got = [scores[a.id] for a in answers]
    expert = [a.expert_score for a in answers]
    pairs = defaultdict(list)
    for a in answers:
        if a.paraphrase_of in scores:
            tier = next(b.tier for b in answers if b.id == a.paraphrase_of)
            tier += "" if a.id.endswith("/paraphrase") else " (extra set)"
            pairs[tier].append(abs(scores[a.id] - scores[a.paraphrase_of]) <= 0.5)
    bias = defaultdict(list)
    for a, s in zip(answers, got, strict=True):
        bias[a.tier].append(s - a.expert_score)
    out = {
        "folds": args.folds,
        "qwk": round(quadratic_weighted_kappa(expert, got), 3),
        "tier_ordering": round(tier_ordering([(a, scores[a.id]) for a in answers]), 3),
        "paraphrase_invariance": round(float(np.mean([x for v in pairs.values() for x in v])), 3),
        "paraphrase_by_tier": {t: round(float(np.mean(v)), 3) for t, v in pairs.items()},
        "bias_by_tier": {t: round(float(np.mean(v)), 2) for t, v in sorted(bias.items())},
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
