"""Would the wrong claims of a question's whole topic catch what its own rubric does not name?

    python evals/topic_claims.py [--split calibration] [--out FILE.json]

A rubric lists only its own question's misconceptions. This grades each eval answer against
every other bank question of its topic as well and counts, tier by tier, the answers for
which one of those grades flags a misconception. A usable topic-wide reading would flag
the misconception tier far more often than strong answers and model paraphrases. Measured
on `rubric-26` (GRADER_LOG, "Wrong claims from the rest of the topic"): it does not.
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import load_answers
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["calibration", "held-out", "all"], default="calibration")
    parser.add_argument("--out", type=Path, help="every answer's flags, as JSON")
    args = parser.parse_args()
    settings = load_settings()
    bank, grader = load_bank(settings), RubricGrader(settings)
    by_topic = collections.defaultdict(list)
    for question in bank:
        by_topic[question.topic].append(question)
    rows, start = [], time.perf_counter()
    for answer in load_answers(split=args.split):
        question = bank.by_id[answer.question_id]
        own = grader.grade(question, answer.answer)
        others = [
            (other.id, flagged.text, flagged.evidence)
            for other in by_topic[question.topic]
            if other.id != question.id
            for flagged in grader.grade(other, answer.answer).misconceptions
        ]
        rows.append(
            {
                "id": answer.id,
                "tier": answer.tier,
                "own": [m.text for m in own.misconceptions],
                "others": others,
            }
        )
    print(f"{len(rows)} answers in {time.perf_counter() - start:.0f} s")
    tiers: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        tiers[row["tier"]].append(row)
    print(f"{'tier':18} {'n':>4}  {'own rubric':>10}  {'other question':>14}  {'two or more':>11}")
    for tier, group in sorted(tiers.items()):
        own = sum(1 for r in group if r["own"]) / len(group)
        other = sum(1 for r in group if r["others"]) / len(group)
        several = sum(1 for r in group if len({o[0] for o in r["others"]}) >= 2) / len(group)
        print(f"{tier:18} {len(group):4}  {own:10.2f}  {other:14.2f}  {several:11.2f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
