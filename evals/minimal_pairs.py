"""Grade minimal pairs: a right answer and the same answer with its critical words set wrong.

    python evals/minimal_pairs.py [FILE.jsonl] [--json] [--out DIR] [--verify BACKEND] [--claim-reader MODEL]

FILE (default `evals/probes/minimal-pairs.jsonl`) holds one pair per line:
`question_id`, `kind` (reversed-direction, swapped-roles, wrong-entity, wrong-number,
over-general, wrong-mechanism), `right`, `wrong` (the same text with `right_claim`
replaced by `wrong_claim`), and the expert's `right_score` and `wrong_score`. The
72 pairs there cover 36 bank questions of both splits (18 each), 12 per kind,
written by writers who had not seen the grader, and nothing is fitted on them.

Reports, overall, by kind and by split: the share of pairs whose right member scores
higher (the target: at least 90 %), the share of wrong members scoring 2.5 or more
(at most 5 %), the mean score of each member against the expert's, how often the
wrong member's grade names a wrong claim (and quotes the changed sentence), and how
often the right member's grade names one (a false alarm).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import split_of
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "evals" / "probes" / "minimal-pairs.jsonl"
PASSING = 2.5


def grade_pairs(path: Path, verify: str | None = None, claim_reader: str | None = None) -> list[dict]:
    settings = load_settings(verify=verify, claim_reader=claim_reader)
    bank = load_bank(settings)
    grader = RubricGrader(settings)
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        pair = json.loads(line)
        question = bank.get(pair["question_id"])
        right, wrong = grader.grade(question, pair["right"]), grader.grade(question, pair["wrong"])
        claim = pair["wrong_claim"].lower()
        rows.append({
            **pair,
            "split": split_of(pair["question_id"]),
            "right_graded": right.score,
            "wrong_graded": wrong.score,
            "wrong_named": bool(wrong.misconceptions),
            "wrong_quoted": any(
                m.evidence.lower() in claim or claim in m.evidence.lower() or _overlaps(m.evidence, claim)
                for m in wrong.misconceptions
            ),
            "right_named": bool(right.misconceptions),
        })  # fmt: skip
    return rows


def _overlaps(evidence: str, claim: str) -> bool:
    """The quoted sentence and the changed claim share most of the claim's words."""
    a, b = set(evidence.lower().split()), set(claim.split())
    return len(a & b) >= 0.6 * max(len(b), 1)


def summarise(rows: list[dict]) -> dict[str, object]:
    if not rows:
        return {}
    right = np.array([r["right_graded"] for r in rows])
    wrong = np.array([r["wrong_graded"] for r in rows])
    return {
        "pairs": len(rows),
        "right_higher": round(float(np.mean(right > wrong)), 3),
        "wrong_passing": round(float(np.mean(wrong >= PASSING)), 3),
        "right_mean": round(float(right.mean()), 2),
        "right_expert_mean": round(float(np.mean([r["right_score"] for r in rows])), 2),
        "wrong_mean": round(float(wrong.mean()), 2),
        "wrong_expert_mean": round(float(np.mean([r["wrong_score"] for r in rows])), 2),
        "wrong_claim_named": round(float(np.mean([r["wrong_named"] for r in rows])), 3),
        "wrong_claim_quoted": round(float(np.mean([r["wrong_quoted"] for r in rows])), 3),
        "false_alarms_on_right": round(float(np.mean([r["right_named"] for r in rows])), 3),
    }


def report(rows: list[dict]) -> dict[str, object]:
    groups: dict[str, dict[str, list[dict]]] = {"kind": defaultdict(list), "split": defaultdict(list)}
    for r in rows:
        groups["kind"][r["kind"]].append(r)
        groups["split"][r["split"]].append(r)
    return {
        "all": summarise(rows),
        **{f"by_{g}": {k: summarise(v) for k, v in sorted(d.items())} for g, d in groups.items()},
    }


def markdown(result: dict[str, object]) -> str:
    head = "| | pairs | right higher | wrong ≥ 2.5 | right (expert) | wrong (expert) | wrong claim named | quoted | false alarms |"
    lines = ["# Minimal pairs", "", head, "|" + "---|" * 9]

    def row(name: str, s: dict) -> str:
        return (f"| {name} | {s['pairs']} | {s['right_higher']:.0%} | {s['wrong_passing']:.0%} | "
                f"{s['right_mean']} ({s['right_expert_mean']}) | {s['wrong_mean']} ({s['wrong_expert_mean']}) | "
                f"{s['wrong_claim_named']:.0%} | {s['wrong_claim_quoted']:.0%} | {s['false_alarms_on_right']:.0%} |")  # fmt: skip

    lines.append(row("all", result["all"]))  # type: ignore[arg-type]
    for group in ("by_kind", "by_split"):
        for name, s in result[group].items():  # type: ignore[union-attr]
            lines.append(row(name, s))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "evals" / "results")
    parser.add_argument("--show", action="store_true", help="print each pair's scores")
    parser.add_argument(
        "--verify", metavar="BACKEND", help="with the grader's second reader (an LLM backend)"
    )
    parser.add_argument(
        "--claim-reader", metavar="MODEL", help="with the grader's claim reader (e.g. smollm2)"
    )
    args = parser.parse_args()
    rows = grade_pairs(args.file, args.verify, args.claim_reader)
    result = report(rows)
    if args.show:
        for r in rows:
            print(f"{r['id']:<18} {r['kind']:<19} right {r['right_graded']:.1f} ({r['right_score']})  "
                  f"wrong {r['wrong_graded']:.1f} ({r['wrong_score']})  named {int(r['wrong_named'])}")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "minimal-pairs" + (f"-verify-{args.verify}" if args.verify else "")
    stem += f"-claim-reader-{Path(args.claim_reader).stem}" if args.claim_reader else ""
    (args.out / f"{stem}.json").write_text(json.dumps({**result, "rows": rows}, indent=1) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(result))
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
