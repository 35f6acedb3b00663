"""Run the full `interviewer bench` several times and write the medians beside each run.

    python evals/bench_median.py [RUNS]      # default 3; writes evals/results/bench-median.{json,md}

Each run is a separate process on a fresh data directory (as a user runs it);
`bench.json`/`bench.md` are left as the last run's own table.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from interviewer.evaluation.bench import FIGURES, judge, show

RESULTS = Path(__file__).parent / "results"


def main(runs: int = 3) -> int:
    data = []
    for i in range(runs):
        print(f"bench run {i + 1}/{runs}...", file=sys.stderr, flush=True)
        subprocess.run(
            [sys.executable, "-m", "interviewer.cli", "bench"], check=False, stdout=subprocess.DEVNULL
        )
        data.append(json.loads((RESULTS / "bench.json").read_text()))
    medians = {}
    for name, (label, unit, _limit) in FIGURES.items():
        values = [d["figures"].get(name, {}).get("value") for d in data]
        present = [v for v in values if v is not None]
        med = statistics.median(present) if present else None
        medians[name] = {
            "label": label,
            "unit": unit,
            "values": values,
            "median": med,
            "result": judge(name, med),
        }
    (RESULTS / "bench-median.json").write_text(
        json.dumps({"runs": data, "figures": medians}, indent=1) + "\n"
    )

    lines = [
        f"# interviewer bench — medians of {runs} full runs",
        "",
        f"{runs} consecutive `interviewer bench` runs on this {data[0]['machine']['cpus']}-CPU machine, "
        "written by `python evals/bench_median.py`. `bench.md` is the last run's own table.",
        "",
        "| run | started | load average before | after | wall |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for i, d in enumerate(data, 1):
        m = d["machine"]
        before, after = (" / ".join(f"{x:g}" for x in m[k]) for k in ("load_avg_before", "load_avg_after"))
        lines.append(f"| {i} | {d['started_at']} | {before} | {after} | {d['wall_s']} s |")
    header = " | ".join(f"run {i}" for i in range(1, runs + 1))
    lines += [
        "",
        f"| figure | {header} | median | target | result |",
        "| --- |" + " ---: |" * (runs + 2) + " --- |",
    ]
    for name, f in medians.items():
        limit = FIGURES[name][2]
        target = f"<= {limit:g} {f['unit']}".strip() if limit is not None else "—"
        cells = " | ".join(show(v, f["unit"]) for v in f["values"])
        lines.append(
            f"| {f['label']} | {cells} | {show(f['median'], f['unit'])} | {target} | {f['result']} |"
        )
    lines += ["", "Per-turn latency by kind of answer (ms, p50 / p95, each run):", ""]
    for kind in data[0]["details"].get("turn_ms", {}):
        per_run = []
        for d in data:
            k = d["details"].get("turn_ms", {}).get(kind)
            per_run.append(f"{k['p50']:.0f} / {k['p95']:.0f} (n={k['n']})" if k else "—")
        lines.append(f"- {kind}: " + "; ".join(per_run))
    errors = [f"run {i}: {name}: {why}" for i, d in enumerate(data, 1) for name, why in d["errors"].items()]
    if errors:
        lines += ["", "Measurements that failed:", "", *[f"- {e}" for e in errors]]
    (RESULTS / "bench-median.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
