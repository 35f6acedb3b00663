"""Check the free-reference grader on human-graded short answers from outside this project.

    python evals/external.py FILE.csv [--question COL] [--reference COL] [--answer COL]
                                      [--score COL] [--raters COL,COL] [--max-score 5] [--json]

Any CSV with a question, a reference answer, a student answer and a human score
works; the public Mohler et al. (2011) short-answer set (columns `question`,
`desired_answer`, `student_answer`, `score_avg`, scores 0-5) is the default layout.
Each answer is graded like `interviewer grade --question Q --reference R`: key points
derived from the reference, the free-reference aggregator. Nothing here is fitted:
the figures say how well the calibration made on this project's own eval set carries
over to other questions, other students and other graders. No data is shipped with
the repository; bring your own file.

With `--raters A,B` (two columns holding each human grader's own score, Mohler's
`score_me,score_other`) it also reports how the two humans agree with each other and
how the grader agrees with each one on the same rows. That is the fair comparison:
the grader against the raters' average is helped by the averaging, which removes
some of each rater's noise.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from interviewer.corpus.bank import make_user_question
from interviewer.evaluation.grades import bootstrap_ci, quadratic_weighted_kappa, spearman
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--question", default="question")
    parser.add_argument("--reference", default="desired_answer")
    parser.add_argument("--answer", default="student_answer")
    parser.add_argument("--score", default="score_avg")
    parser.add_argument(
        "--raters",
        default="",
        help="two columns with each human grader's own score, e.g. score_me,score_other",
    )
    parser.add_argument(
        "--max-score", type=float, default=5.0, help="the human scale's top (rescaled to 0-5)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.csv.is_file():
        print(f"error: {args.csv} not found; give a CSV of human-graded answers", file=sys.stderr)
        return 2
    with args.csv.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    raters = [c.strip() for c in args.raters.split(",") if c.strip()]
    if args.raters and len(raters) != 2:
        print(f"error: --raters takes two column names separated by a comma, not {args.raters!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    missing = {args.question, args.reference, args.answer, args.score, *raters} - set(rows[0] if rows else {})
    if missing:
        print(f"error: {args.csv} has no column(s) {sorted(missing)}; name them with --question etc.",
              file=sys.stderr)  # fmt: skip
        return 2
    grader = RubricGrader(load_settings())
    human, ours = [], []
    by_question: dict[str, list[tuple[float, float]]] = defaultdict(list)
    latencies = []
    skipped = []
    per_rater: list[list[float]] = [[], []]
    for n, row in enumerate(rows, 2):  # line numbers as an editor shows them (1 is the header)
        try:
            q = make_user_question(row[args.question], row[args.reference])
        except ValueError as exc:  # BankError and pydantic's ValidationError: no usable reference
            skipped.append(f"line {n}: {str(exc).splitlines()[0]}")
            continue
        g = grader.grade(q, row[args.answer])
        h = 5.0 * float(row[args.score]) / args.max_score
        human.append(h)
        ours.append(g.score)
        by_question[row[args.question]].append((h, g.score))
        for col, scores in zip(raters, per_rater, strict=False):
            scores.append(5.0 * float(row[col]) / args.max_score)
        latencies.append(g.latency_ms)
    if len(human) < 2:
        print(f"error: fewer than two gradable rows in {args.csv} ({len(skipped)} skipped)", file=sys.stderr)
        return 2
    human_half = [round(h * 2) / 2 for h in human]

    out = {
        "file": str(args.csv),
        "answers": len(human),
        "skipped": skipped,
        "questions": len(by_question),
        "pearson": round(pearson(human, ours), 3),
        "pearson_ci": bootstrap_ci(by_question, pearson),
        "spearman": round(spearman(human, ours), 3),
        "qwk": round(quadratic_weighted_kappa(human_half, ours), 3),
        "mae": round(float(np.mean(np.abs(np.array(human) - np.array(ours)))), 3),
        "mean_human": round(float(np.mean(human)), 2),
        "mean_grader": round(float(np.mean(ours)), 2),
        "latency_p50_ms": round(float(np.percentile(latencies, 50)), 1),
    }
    if raters:
        out.update(rater_figures(raters, per_rater, ours))
    print_figures(out, as_json=args.json)
    return 0


def pearson(a: list[float], b: list[float]) -> float:
    return float(pearsonr(a, b)[0]) if len(set(a)) > 1 and len(set(b)) > 1 else float("nan")


def rater_figures(names: list[str], per_rater: list[list[float]], ours: list[float]) -> dict[str, object]:
    """The two human raters against each other, and the grader against each of them."""
    first, second = ([round(v * 2) / 2 for v in scores] for scores in per_rater)
    out: dict[str, object] = {
        "human_human_pearson": round(pearson(per_rater[0], per_rater[1]), 3),
        "human_human_qwk": round(quadratic_weighted_kappa(first, second), 3),
    }
    for name, scores, half in zip(names, per_rater, (first, second), strict=True):
        out[f"pearson_vs_{name}"] = round(pearson(scores, ours), 3)
        out[f"qwk_vs_{name}"] = round(quadratic_weighted_kappa(half, ours), 3)
        out[f"mean_{name}"] = round(float(np.mean(scores)), 2)
    return out


def print_figures(figures: dict[str, object], as_json: bool) -> None:
    """JSON, or one `name  value` line per figure."""
    if as_json:
        print(json.dumps(figures, indent=1))
        return
    width = max(map(len, figures)) + 2
    for name, value in figures.items():
        print(f"{name:{width}s}{value}")


if __name__ == "__main__":
    sys.exit(main())
