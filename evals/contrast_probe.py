"""Does the claim reader say *which* of a claim and its wrong twin an answer states?

A measurement on the calibration split only (nothing here is fitted or shipped): for every
answer and every rubric claim of its question that has a twin (a core key point and its
wrong twin; a misconception and its corrected twin), the claim reader's support for both,
read two ways:

- `mean`: the support as the grader reads it (mean over the claim's tokens);
- `critical`: the same, over only the tokens where the claim and its twin differ
  (difflib on the token ids), so the words they share, and the topic with them, cancel.

The contrast is claim minus twin. Reported: AUC of the contrast for the expert's labels
(key point covered against missed, misconception stated against not), and at the answer
level, confident-misconception answers against strong ones by the worst contrast.

    python evals/contrast_probe.py [--limit N] [--out FILE]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import load_answers
from interviewer.models.embeddings import set_compute_threads
from interviewer.models.support import BASELINE, SupportReader
from interviewer.settings import load_settings


def critical(a: list[int], b: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the tokens of `a` and of `b` that the other does not share (difflib)."""
    ma, mb = np.zeros(len(a), bool), np.zeros(len(b), bool)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            ma[i1:i2] = True
            mb[j1:j2] = True
    if not ma.any():
        ma[:] = True
    if not mb.any():
        mb[:] = True
    return ma, mb


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.array(pos)[:, None], np.array(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = load_settings()
    bank = load_bank(settings)
    answers = load_answers(split="calibration")
    if args.limit:
        answers = answers[: args.limit]
    reader = SupportReader()
    reader.load()
    import torch

    set_compute_threads(2)
    baselines: dict[tuple[str, str], Any] = {}
    kp_rows: list[dict[str, Any]] = []
    mis_rows: list[dict[str, Any]] = []
    per_answer: list[dict[str, Any]] = []
    for n, a in enumerate(answers):
        q = bank.get(a.question_id)
        pairs = [("kp", i, kp.text, kp.twin) for i, kp in enumerate(q.key_points) if kp.core and kp.twin]
        pairs += [("mis", i, m.text, m.twin) for i, m in enumerate(q.rubric.misconceptions) if m.twin]
        if not pairs:
            continue
        claims = [c for _, _, x, t in pairs for c in (x, t)]
        with torch.inference_mode():
            missing = [c for c in dict.fromkeys(claims) if (q.id, c) not in baselines]
            if missing:
                for c, r in zip(
                    missing,
                    reader.token_logprobs(BASELINE.format(question=q.question), missing),
                    strict=True,
                ):
                    baselines[(q.id, c)] = r
            given = reader.token_logprobs(reader._answer_prefix(q.question, a.answer), claims)
        worst_kp, worst_kp_mean, worst_mis, worst_mis_mean = 9.0, 9.0, -9.0, -9.0
        for k, (kind, i, _x, _t) in enumerate(pairs):
            (ids_x, lx), (ids_t, lt) = given[2 * k], given[2 * k + 1]
            bx, bt = baselines[(q.id, claims[2 * k])][1], baselines[(q.id, claims[2 * k + 1])][1]
            sx, st = (lx - bx).numpy(), (lt - bt).numpy()
            mx, mt = critical(ids_x, ids_t)
            row = {
                "answer": a.id,
                "tier": a.tier,
                "mean": float(sx.mean() - st.mean()),
                "critical": float(sx[mx].mean() - st[mt].mean()),
                "critical_sum": float(sx[mx].sum() - st[mt].sum()),
                "support": float(sx.mean()),
            }
            if kind == "kp":
                row["label"] = 1.0 if i in a.covers else 0.5 if i in a.partial else 0.0
                kp_rows.append(row)
                worst_kp = min(worst_kp, row["critical"])
                worst_kp_mean = min(worst_kp_mean, row["mean"])
            else:
                row["label"] = 1.0 if i in a.misconceptions else 0.0
                mis_rows.append(row)
                worst_mis = max(worst_mis, row["critical"])
                worst_mis_mean = max(worst_mis_mean, row["mean"])
        per_answer.append({"answer": a.id, "tier": a.tier, "worst_kp": worst_kp, "worst_kp_mean": worst_kp_mean,
                           "worst_mis": worst_mis, "worst_mis_mean": worst_mis_mean})  # fmt: skip
        if n % 50 == 0:
            print(f"{n}/{len(answers)}", file=sys.stderr)

    report: dict[str, Any] = {}
    for name, rows, yes, no in (
        ("key point covered vs missed", kp_rows, 1.0, 0.0),
        ("misconception stated vs not", mis_rows, 1.0, 0.0),
    ):
        for stat in ("support", "mean", "critical", "critical_sum"):
            pos = [r[stat] for r in rows if r["label"] == yes]
            neg = [r[stat] for r in rows if r["label"] == no]
            report[f"{name} / {stat}"] = {"auc": auc(pos, neg), "n": [len(pos), len(neg)]}
    mis_ans = [p for p in per_answer if p["tier"] == "misconception"]
    strong = [p for p in per_answer if p["tier"] == "strong"]
    for stat, sign in (("worst_kp", -1), ("worst_kp_mean", -1), ("worst_mis", 1), ("worst_mis_mean", 1)):
        report[f"answer: misconception vs strong / {stat}"] = {
            "auc": auc([sign * p[stat] for p in mis_ans], [sign * p[stat] for p in strong]),
            "n": [len(mis_ans), len(strong)],
            "median": [
                float(np.median([p[stat] for p in mis_ans])),
                float(np.median([p[stat] for p in strong])),
            ],
        }
    tiers = sorted({p["tier"] for p in per_answer})
    report["tiers"] = {t: sum(p["tier"] == t for p in per_answer) for t in tiers}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(
            json.dumps({"report": report, "kp": kp_rows, "mis": mis_rows, "answers": per_answer})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
