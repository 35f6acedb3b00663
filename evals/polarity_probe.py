"""Read the minimal-pair probe's changed sentences with the polarity reader alone.

    python evals/polarity_probe.py [--adapter FILE] [--all-twins] [--json]

For each probe pair the right and the wrong member differ in one sentence
(`right_claim`, `wrong_claim`). Both are read against the rubric claim of the
question closest to the right sentence under MiniLM (a core key point or a
misconception with a twin), the way the grader reads a span: the lean is
P(states | claim) - P(states | twin). With --all-twins, a key point's twin is joined by
its three other wrong versions in `evals/polarity/wrong_versions.jsonl` and the most
stated of them counts. For a misconception the sign is turned, so a higher score
always means "reads as the right member".

Reports the share of pairs whose right sentence reads higher (paired), the AUC of
right against wrong sentences (unpaired), by kind and by split. Measurement only:
nothing is fitted or chosen on the probe.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from interviewer.corpus.bank import load_bank  # noqa: E402
from interviewer.evaluation.grades import split_of  # noqa: E402
from interviewer.models.embeddings import embedder_for  # noqa: E402
from interviewer.models.polarity import ADAPTER_FILE, PolarityReader  # noqa: E402
from interviewer.settings import load_settings  # noqa: E402

PROBE = ROOT / "evals" / "probes" / "minimal-pairs.jsonl"
# three more wrong versions of every core key point of the bank (a wrong term, a wrong number,
# roles swapped, a claim made absolute...), written from the rubric and reference only
WRONG_VERSIONS = ROOT / "evals" / "polarity" / "wrong_versions.jsonl"


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a random positive scores above a random negative), ties half."""
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n) + 0.5 * (p == n)).mean())


def lean(reader: PolarityReader, claim: str, twins: list[str], sentence: str) -> float:
    """P(states | claim) minus the most stated of its wrong versions, on one sentence."""
    r = reader.read([(claim, sentence)] + [(t, sentence) for t in twins])
    return r[0].states - max(x.states for x in r[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", type=Path, default=ADAPTER_FILE)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--all-twins", action="store_true", help="a key point's other wrong versions too")
    args = parser.parse_args()
    settings = load_settings()
    bank = load_bank(settings)
    embedder = embedder_for(settings)
    reader = PolarityReader(args.adapter, threads=settings.embedding_threads)
    more = {}  # (question id, key point index) -> its other wrong versions
    for line in WRONG_VERSIONS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            more[(row["question_id"], row["index"])] = [w["text"] for w in row["wrong"]]
    rows = [json.loads(line) for line in PROBE.read_text(encoding="utf-8").splitlines() if line.strip()]
    results = []
    for row in rows:
        q = bank.get(row["question_id"])
        claims = [(kp.text, [kp.twin, *more.get((q.id, i), [])], 1.0)
                  for i, kp in enumerate(q.key_points) if kp.core and kp.twin]  # fmt: skip
        claims += [(m.text, [m.twin], -1.0) for m in q.rubric.misconceptions if m.twin]
        sims = embedder.encode([c for c, _, _ in claims]) @ embedder.encode([row["right_claim"]]).T
        claim, twins, sign = claims[int(sims[:, 0].argmax())]
        twins = twins if args.all_twins else twins[:1]
        right, wrong = (lean(reader, claim, twins, row[k]) * sign for k in ("right_claim", "wrong_claim"))
        results.append({"id": row["id"], "kind": row["kind"], "split": split_of(row["question_id"]),
                        "right": round(right, 3), "wrong": round(wrong, 3)})  # fmt: skip
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        for key in ("all", r["kind"], r["split"]):
            groups[key].append(r)
    report = {
        "adapter": str(args.adapter),
        "groups": {
            key: {
                "pairs": len(rs),
                "right_reads_higher": round(float(np.mean([r["right"] > r["wrong"] for r in rs])), 3),
                "auc": round(auc([r["right"] for r in rs], [r["wrong"] for r in rs]), 3),
            }
            for key, rs in groups.items()
        },
        "pairs": results,
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, g in report["groups"].items():
            print(
                f"{key:20s} {g['pairs']:3d} pairs  right reads higher {g['right_reads_higher']:.0%}  AUC {g['auc']:.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
