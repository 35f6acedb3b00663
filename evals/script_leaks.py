"""How much of its answer each line of the interview script gives away (the leak score of
tests/test_script.py), against the stem templates it replaced.

    python evals/script_leaks.py

Leak: the IDF-weighted share of a key point's content words, its question's words left
out, that a line says. Probes and the old follow-up are scored against their point,
challenges against the misconception's corrected twin and the core points (the highest),
hints against every key point (the highest). The old follow-up quoted the first 40 % of
the point's words ("It starts “Prevent with QK-norm, z-loss, Adam …”"), the old hint 70 %.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from interviewer.corpus.bank import load_bank
from interviewer.grading.text import IDF, content_stems
from interviewer.settings import load_settings


def old_stem(text: str, share: float) -> str:
    words = text.split()
    return (
        ""
        if len(words) <= 2
        else " ".join(words[: max(1, min(len(words) - 2, math.ceil(len(words) * share)))])
    )


def main() -> int:
    bank = load_bank(load_settings())
    idf = IDF([q.reference for q in bank] + [q.question for q in bank])

    def leak(secret: str, line: str, question: str) -> float:
        return idf.recall(secret, set(content_stems(line)), set(content_stems(question)))

    rows: dict[str, list[float]] = {
        k: [] for k in ("probe", "challenge", "hint", "old follow-up", "old hint")
    }
    for q in bank:
        core = [kp.text for kp in q.key_points if kp.core]
        for kp in q.key_points:
            rows["probe"].append(leak(kp.text, kp.probe, q.question))
            if kp.core:
                rows["old follow-up"].append(leak(kp.text, old_stem(kp.text, 0.4), q.question))
                rows["old hint"].append(leak(kp.text, old_stem(kp.text, 0.7), q.question))
        for m in q.rubric.misconceptions:
            rows["challenge"].append(max(leak(s, m.challenge, q.question) for s in [m.twin, *core] if s))
        for h in q.hints:
            rows["hint"].append(max(leak(kp.text, h, q.question) for kp in q.key_points))
    print("| line | n | median | p90 | max | share 0 |\n|---|---|---|---|---|---|")
    for name, v in rows.items():
        a = np.array(v)
        print(
            f"| {name} | {len(a)} | {np.median(a):.2f} | {np.quantile(a, 0.9):.2f} | {a.max():.2f} | {np.mean(a == 0):.0%} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
