"""The wrong-claims scorecard: every target of the wrong-claims issue beside the figure measured now.

    python evals/wrong_claims.py [--runs N] [--mohler FILE.csv ...] [--json] [--out DIR]

One command for the figures the closing notes quote, each with PASS or MISS:
- the grading eval on the held-out split (`interviewer eval --split held-out`): QWK, tier
  ordering, the confident-misconception tier's bias, p95 latency per grade;
- the minimal-pair probe (`evals/minimal_pairs.py`): the right member higher, the wrong
  member passing (2.5 or more);
- the new-writers misconception probe (`evals/probe.py`): bias, misconceptions flagged,
  and the flags on answers that state none (reported, no target);
- every off-topic answer of the eval set (both splits) at most 1.0;
- every bank question's exact text resolving to its own id;
- with `--mohler`, Pearson r on each human-graded CSV (free-reference mode; no such data
  ships with the repository: see `evals/GRADER_LOG.md`, "Outside data").

Nothing is fitted here; the embedded default grader is measured as it ships. Writes
`wrong-claims.{json,md}` to `--out` (default `evals/results`). About 1.5 minutes at
`--runs 1` on two cores (the eval's retest runs add about 20 s each).
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import evaluate, load_answers
from interviewer.grading.commands import resolve_question
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import minimal_pairs
import probe

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "evals" / "probes"
OFF_TOPIC_CEILING = 1.0

AT_LEAST, AT_MOST = operator.ge, operator.le


@dataclass
class Figure:
    """One target of the issue and what was measured for it."""

    label: str
    value: float | None
    target: float | None  # None: reported, no target
    sense: str = ">="  # ">=": at least the target; "<=": at most
    shown: str = ""  # the value as a sentence shows it ("34 of 79"), where a bare number says less

    @property
    def result(self) -> str:
        if self.target is None:
            return "info"
        if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            return "n/a"
        meets: Callable[[float, float], bool] = AT_LEAST if self.sense == ">=" else AT_MOST
        return "PASS" if meets(self.value, self.target) else "MISS"


def held_out(runs: int) -> list[Figure]:
    r = evaluate(load_settings(), split="held-out", runs=runs)
    bias = r["bias_by_tier"].get("misconception")  # type: ignore[union-attr]
    return [
        Figure("held-out QWK", r["qwk"], 0.90),  # type: ignore[arg-type]
        Figure("held-out tier ordering", r["tier_ordering"], 0.97),  # type: ignore[arg-type]
        Figure("held-out confident-misconception bias", bias, 0.5, "<="),
        Figure("held-out paraphrase invariance", r["paraphrase_invariance"], None),  # type: ignore[arg-type]
        Figure("held-out transcription-noise invariance", r["noise_invariance"], None),  # type: ignore[arg-type]
        Figure("held-out strong-answer bias", r["bias_by_tier"].get("strong"), None),  # type: ignore[union-attr]
        Figure("latency p95 per grade (ms)", r["latency_ms_p95"], 60.0, "<="),  # type: ignore[arg-type]
    ]


def pairs() -> list[Figure]:
    s = minimal_pairs.report(minimal_pairs.grade_pairs(PROBES / "minimal-pairs.jsonl"))["all"]
    return [
        Figure("minimal pairs: right member higher", s["right_higher"], 0.90),  # type: ignore[index]
        Figure("minimal pairs: wrong member 2.5 or more", s["wrong_passing"], 0.05, "<="),  # type: ignore[index]
        Figure("minimal pairs: wrong claim named", s["wrong_claim_named"], None),  # type: ignore[index]
        Figure("minimal pairs: false alarms on right members", s["false_alarms_on_right"], None),  # type: ignore[index]
    ]


def new_writers() -> list[Figure]:
    r = probe.probe(PROBES / "misconceptions-new-writers.jsonl")
    flagged, labelled = int(r["misconceptions_flagged"]), int(r["misconceptions_labelled"])  # type: ignore[call-overload]
    return [
        Figure("new writers: misconception bias", r["mean_grader_minus_expert"], 0.6, "<="),  # type: ignore[arg-type]
        Figure("new writers: misconceptions flagged", flagged, 60, ">=", f"{flagged} of {labelled}"),
        Figure(
            "new writers: false flags (misconceptions the writer did not state)",
            r["other_misconceptions_flagged"],
            None,
        ),  # type: ignore[arg-type]
    ]


def off_topic() -> list[Figure]:
    settings = load_settings()
    bank, grader = load_bank(settings), RubricGrader(settings)
    scores = [
        grader.grade(bank.get(a.question_id), a.answer).score
        for a in load_answers(split="all")
        if a.tier == "off-topic"
    ]
    top = max(scores)
    return [
        Figure(
            "highest off-topic answer (eval set, both splits)",
            top,
            OFF_TOPIC_CEILING,
            "<=",
            f"{top:g} of {len(scores)} answers",
        )
    ]


def exact_texts() -> list[Figure]:
    settings = load_settings()
    bank = load_bank(settings)
    wrong = [q.id for q in bank if resolve_question(settings, bank, question=q.question).id != q.id]
    n = len(list(bank))
    return [Figure("bank questions whose exact text resolves to their own id", n - len(wrong), n, ">=",
                   f"{n - len(wrong)} of {n}" + (f" (not: {', '.join(wrong[:5])})" if wrong else ""))]  # fmt: skip


def mohler(paths: list[Path]) -> list[Figure]:
    """Pearson r per file, as `evals/external.py` grades it (free-reference mode, its columns)."""
    out = []
    for path in paths:
        run = subprocess.run(
            [sys.executable, str(ROOT / "evals" / "external.py"), str(path), "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if run.returncode != 0:
            raise SystemExit(run.stderr.strip() or f"evals/external.py failed on {path}")
        r = json.loads(run.stdout)
        out.append(Figure(f"Pearson r on {path.name}", r["pearson"], 0.60, ">=",
                          f"{r['pearson']:.3f} ({r['answers']} answers)"))  # fmt: skip
    return out


def markdown(figures: list[Figure]) -> str:
    lines = [
        "# Wrong claims: the issue's targets, measured",
        "",
        "Written by `python evals/wrong_claims.py`. The embedded default grader as it ships; nothing fitted here.",
        "",
        "| figure | value | target | result |",
        "|---|---|---|---|",
    ]
    for f in figures:
        value = f.shown or ("n/a" if f.value is None else f"{f.value:g}")
        target = "—" if f.target is None else f"{f.sense} {f.target:g}"
        lines.append(f"| {f.label} | {value} | {target} | {f.result} |")
    missed = [f.label for f in figures if f.result == "MISS"]
    lines += ["", f"{len(missed)} target(s) missed" + (": " + "; ".join(missed) if missed else ".")]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=1, help="test-retest runs of the held-out eval (5 as the notes quote)"
    )
    parser.add_argument(
        "--mohler", type=Path, nargs="*", default=[], help="Mohler-format CSVs of human-graded answers"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--out", type=Path, default=ROOT / "evals" / "results")
    args = parser.parse_args()
    missing = [p for p in args.mohler if not p.is_file()]
    if missing:
        print(
            f"error: {', '.join(map(str, missing))} not found; give Mohler-format CSV files", file=sys.stderr
        )
        return 2
    figures = (
        held_out(args.runs) + pairs() + new_writers() + off_topic() + exact_texts() + mohler(args.mohler)
    )
    args.out.mkdir(parents=True, exist_ok=True)
    data = [asdict(f) | {"result": f.result} for f in figures]
    (args.out / "wrong-claims.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (args.out / "wrong-claims.md").write_text(markdown(figures), encoding="utf-8")
    print(json.dumps(data, indent=1) if args.json else markdown(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
