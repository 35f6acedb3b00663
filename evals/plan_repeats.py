"""Count questions asked twice in other words: plan many sessions and look for pairs.

    python evals/plan_repeats.py [--sessions 500]

Plans sessions with varied options (topic, difficulty, source, length) and seeds, as
`interviewer practice` does for a candidate with no history, and counts the pairs of
questions in one session that share a concept or of which one's key points say most of
the other's core points (`policy.Overlap`). Run for the planner as it is and for the
planner without the overlap check, for comparison.
"""

from __future__ import annotations

import argparse
import random
import sys

from interviewer.corpus.bank import load_bank
from interviewer.interview.policy import NOW, Overlap, plan_session
from interviewer.settings import load_settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500)
    args = parser.parse_args()
    bank = load_bank(load_settings())
    overlap = Overlap(list(bank))
    topics = sorted({q.topic for q in bank})
    rng = random.Random(0)
    for label, repeats in (("planner", overlap.repeats), ("without the overlap check", None)):
        pairs = sessions = 0
        for n in range(args.sessions):
            topic = rng.choice([None, None, rng.choice(topics)])
            difficulty = rng.choice([None, "easy", "medium", "hard"])
            source = rng.choice([None, None, "000", "002", "003", "004"])
            candidates = bank.filter([topic] if topic else None, difficulty, source)
            plan = plan_session(candidates, rng.choice([3, 5, 10, 20]), {}, bank.concept_of, NOW,
                                random.Random(n), repeats)  # fmt: skip
            sessions += 1
            pairs += sum(
                bank.concept_of(a) == bank.concept_of(b) or overlap.repeats(a, b)
                for i, a in enumerate(plan) for b in plan[i + 1:]
            )  # fmt: skip
        print(f"{label}: {pairs} repeated pairs in {sessions} sessions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
