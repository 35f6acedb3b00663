"""Spoken numbers read as a listener hears them: the number the speaker commits to.

    python evals/speech/spoken_numbers.py [--json] [--out DIR]

Reads `evals/speech/spoken_numbers.jsonl`: answers to the bank's numeric questions written
as a transcript gives them (numbers in words, fillers, restarts, self-corrections, a number
said twice, two numbers offered as alternatives), each with the number the speaker finally
commits to, the verdict a listener gives it and an expert's grade. Nothing is calibrated on
this set. Reported: how many numeric verdicts read right, overall and by kind, and the
grade's mean distance from the expert.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.grading.numbers import check_numeric
from interviewer.grading.rubric import RubricGrader
from interviewer.grading.text import clean
from interviewer.settings import load_settings

HERE = Path(__file__).resolve().parent
DATA = HERE / "spoken_numbers.jsonl"


def load(path: Path = DATA) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n}: not JSON ({exc})") from exc
    return rows


def measure(rows: list[dict], grade: bool = True) -> dict:
    settings = load_settings()
    bank = load_bank(settings)
    grader = RubricGrader(settings) if grade else None
    by_kind: dict[str, list[bool]] = defaultdict(list)
    wrong, gaps = [], []
    for r in rows:
        q = bank.get(r["question_id"])
        assert q.rubric.numeric, f"{r['id']}: {q.id} has no numeric target"
        check = check_numeric(clean(r["answer"]), q.rubric.numeric)
        right = check.verdict == r["expected"]
        by_kind[r["kind"]].append(right)
        if not right:
            wrong.append(
                {"id": r["id"], "expected": r["expected"], "read": check.verdict, "found": check.found_text}
            )
        if grader is not None:
            gaps.append(abs(grader.grade(q, r["answer"]).score - r["expert_score"]))
    total = [x for v in by_kind.values() for x in v]
    return {
        "answers": len(rows),
        "read_right": sum(total),
        "by_kind": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_kind.items())},
        "grade_mean_abs_error": round(sum(gaps) / len(gaps), 3) if gaps else None,
        "misread": wrong,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, help="write spoken-numbers.json there")
    args = ap.parse_args(argv)
    result = measure(load(args.file))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "spoken-numbers.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"numeric verdicts read right: {result['read_right']}/{result['answers']}")
        for kind, share in result["by_kind"].items():
            print(f"  {kind}: {share}")
        print(f"grade, mean |grader - expert|: {result['grade_mean_abs_error']}")
        for m in result["misread"]:
            print(
                f"  misread {m['id']}: expected {m['expected']}, read {m['read']} ({m['found']!r})",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
