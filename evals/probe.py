"""Grade labelled answers that no calibration has seen, with the shipped grader.

    python evals/probe.py FILE.jsonl [--json]

FILE holds eval-set records (`question_id`, `answer`, `expert_score`, `misconceptions`,
as in `evals/answers/`) kept out of `evals/answers/` so that `calibrate.py` never fits on
them. `evals/probes/misconceptions-new-writers.jsonl` holds 78 confident-misconception
answers to calibration-split questions, written after the calibration by writers who
had not written its answers: it measures how well misconception detection carries over
to new wordings. Reports the mean grader-minus-expert score, the mean absolute error,
and how many labelled misconceptions the grader flagged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from external import print_figures

from interviewer.bank import load_bank
from interviewer.evaluation import EvalAnswer
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings


def probe(path: Path) -> dict[str, object]:
    settings = load_settings()
    bank = load_bank(settings)
    grader = RubricGrader(settings)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    answers = [EvalAnswer.model_validate_json(line) for line in lines]
    diffs, labelled, flagged, false_alarms = [], 0, 0, 0
    for a in answers:
        question = bank.get(a.question_id)
        grade = grader.grade(question, a.answer)
        diffs.append(grade.score - a.expert_score)
        said = {m.text for m in grade.misconceptions}
        wanted = {question.rubric.misconceptions[i].text for i in a.misconceptions}
        labelled += len(wanted)
        flagged += len(wanted & said)
        false_alarms += len(said - wanted)
    return {
        "file": str(path),
        "answers": len(answers),
        "mean_grader_minus_expert": round(float(np.mean(diffs)), 3) if diffs else None,
        "mae": round(float(np.mean(np.abs(diffs))), 3) if diffs else None,
        "misconceptions_labelled": labelled,
        "misconceptions_flagged": flagged,
        "other_misconceptions_flagged": false_alarms,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.jsonl.is_file():
        print(f"error: {args.jsonl} not found; give a JSONL of labelled answers", file=sys.stderr)
        return 2
    try:
        result = probe(args.jsonl)
    except (ValueError, KeyError, IndexError) as exc:
        print(f"error: {args.jsonl}: {exc}", file=sys.stderr)
        return 2
    print_figures(result, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
