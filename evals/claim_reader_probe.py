"""Read the minimal-pair probe with the claim reader alone, outside the grade.

    python evals/claim_reader_probe.py [--model smollm2] [--json]

The claim reader (`interviewer/models/support.py`) gives every rubric claim a support: what
the answer adds to the claim's mean token log-probability under a small language model.
For each probe pair (a right answer and the same answer with its critical words set wrong)
the right and the wrong member are read against every key point of the question; the pair
counts as ordered when the right member's key points have more support in all. For
comparison the same is done for the calibration split's written sentences
(`evals/polarity/written.jsonl`: a sentence that states a claim and the same sentence with
its critical words changed), read against their own claim.

Measurement only: nothing here is fitted or chosen, and the grader is not involved. It
shows how much of the probe's signal the reader has before the grade's aggregation
(`interviewer eval --claim-reader`, `evals/minimal_pairs.py --claim-reader`) spends it.
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
from interviewer.models.support import SupportReader  # noqa: E402
from interviewer.settings import load_settings  # noqa: E402

PROBE = ROOT / "evals" / "probes" / "minimal-pairs.jsonl"
WRITTEN = ROOT / "evals" / "polarity" / "written.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bank = load_bank(load_settings())
    reader = SupportReader(args.model)

    by_kind: dict[str, list[bool]] = defaultdict(list)
    for line in PROBE.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        pair = json.loads(line)
        q = bank.get(pair["question_id"])
        points = [kp.text for kp in q.key_points]
        right, wrong = (sum(reader.support(q.ask, pair[side], points)) for side in ("right", "wrong"))
        by_kind[pair["kind"]].append(right > wrong)

    written: dict[str, list[bool]] = defaultdict(list)
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("wave", 1) != 1:
            continue
        q = bank.get(row["question_id"])
        for said, changed in zip(row["states"][:2], row["contradicts"][:2], strict=False):
            right, wrong = (reader.support(q.ask, s, [row["claim"]])[0] for s in (said, changed["sentence"]))
            written[changed["error"]].append(right > wrong)

    def share(groups: dict[str, list[bool]]) -> dict[str, object]:
        every = [x for v in groups.values() for x in v]
        return {
            "pairs": len(every),
            "ordered": round(float(np.mean(every)), 3),
            "by_kind": {k: round(float(np.mean(v)), 3) for k, v in sorted(groups.items())},
        }

    result = {"model": args.model, "probe": share(by_kind), "written_calibration": share(written)}
    out = ROOT / "evals" / "results" / f"claim-reader-probe-{Path(args.model).stem}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name in ("probe", "written_calibration"):
            r = result[name]
            assert isinstance(r, dict)
            kinds = "  ".join(f"{k} {v:.2f}" for k, v in r["by_kind"].items())
            print(f"{name}: {r['ordered']:.2f} of {r['pairs']} pairs ordered right  ({kinds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
