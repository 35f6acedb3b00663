"""How often each text reading reads the calibration split's written sentences.

    python evals/text_readings.py [--json] [--out DIR]

The text readings (word order, two quantities' moves, a term or a number swapped, roles
swapped, the names a point gives) read a wrong claim in an answer's own words, and the
grade names it and holds the answer to the read-claim cap. They are chosen on the written
sentences of `evals/polarity/written.jsonl`: for each of the calibration split's core key
points, sentences that state it and sentences that say it wrong, labelled by kind of error.
This reports, per reading and per kind of error, how many wrong sentences each reads as
their own point said wrong, and how many right sentences it reads so (for their own point,
and for any point of their question). A reading earns its place by reading wrong sentences
and no right one; the figures the README and `evals/GRADER_LOG.md` quote come from here.
No model is loaded: the readings are pure text.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.corpus.schema import Question
from interviewer.grading.covariation import read_covariation
from interviewer.grading.names import read_named_roles, read_number_roles, read_other_names
from interviewer.grading.order import read_order
from interviewer.grading.roles import read_roles
from interviewer.grading.substitution import read_points
from interviewer.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
WRITTEN = ROOT / "evals" / "polarity" / "written.jsonl"

# reading name -> (question, sentence) -> per key point, whether the sentence reads as it said wrong
Reading = Callable[[Question, str], list[bool]]


def _points(q: Question) -> list[list[str]]:
    return [[kp.text, *kp.alternatives] for kp in q.key_points]


def _twins(q: Question) -> list[str]:
    return [kp.twin or "" for kp in q.key_points]


def _turned(q: Question, s: str) -> list[bool]:
    out = []
    for kp in q.key_points:
        o = read_order(kp.text, kp.twin, [s]) or read_covariation(kp.text, kp.twin, [s])
        out.append(o is not None and o.lean < 0)
    return out


READINGS: dict[str, Reading] = {
    "order or moves": _turned,
    "term or number": lambda q, s: [r is not None for r in read_points(_points(q), [s], s, _twins(q))],
    "roles": lambda q, s: [r is not None for r in read_roles(_points(q), [s])],
    "named roles": lambda q, s: [r is not None for r in read_named_roles(_points(q), [s])],
    "other name": lambda q, s: [r is not None for r in read_other_names(_points(q), [s], s, q.question)],
    "number roles": lambda q, s: [r is not None for r in read_number_roles(_points(q), [s])],
}


def measure(path: Path = WRITTEN) -> dict[str, object]:
    bank = load_bank(load_settings())
    wrong: Counter[tuple[str, str]] = Counter()  # (reading, kind) -> wrong sentences read
    wrong_any: Counter[str] = Counter()  # kind -> read by any reading
    kinds: Counter[str] = Counter()
    right_own: Counter[str] = Counter()
    right_any: Counter[str] = Counter()
    right_total = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] != "key_point":
            continue
        q = bank.get(row["question_id"])
        k = row["index"]
        for sentence in row["states"]:
            right_total += 1
            for name, read in READINGS.items():
                reads = read(q, sentence)
                right_own[name] += reads[k]
                right_any[name] += any(reads)
            right_own["any reading"] += any(read(q, sentence)[k] for read in READINGS.values())
            right_any["any reading"] += any(any(read(q, sentence)) for read in READINGS.values())
        for said in row["contradicts"]:
            kind, sentence = said["error"], said["sentence"]
            kinds[kind] += 1
            hit = False
            for name, read in READINGS.items():
                own = read(q, sentence)[k]
                wrong[(name, kind)] += own
                hit = hit or own
            wrong_any[kind] += hit
    names = [*READINGS, "any reading"]
    table = {
        name: {
            "wrong": {
                kind: (wrong_any[kind] if name == "any reading" else wrong[(name, kind)]) for kind in kinds
            },
            "right_own_point": right_own[name],
            "right_any_point": right_any[name],
        }
        for name in names
    }
    return {
        "kinds": dict(kinds),
        "wrong_total": sum(kinds.values()),
        "right_total": right_total,
        "readings": table,
    }


def markdown(result: dict) -> str:
    kinds = sorted(result["kinds"])
    head = ["reading", *kinds, "all wrong", "right (own point)", "right (any point)"]
    lines = [
        "# Text readings on the written sentences (calibration split)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, r in result["readings"].items():
        cells = [f"{r['wrong'][k]} / {result['kinds'][k]}" for k in kinds]
        total = f"{sum(r['wrong'].values())} / {result['wrong_total']}"
        right = [
            f"{r['right_own_point']} / {result['right_total']}",
            f"{r['right_any_point']} / {result['right_total']}",
        ]
        lines.append("| " + " | ".join([name, *cells, total, *right]) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "evals" / "results")
    args = parser.parse_args()
    result = measure()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "text-readings.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "text-readings.md").write_text(markdown(result))
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
