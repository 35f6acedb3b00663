"""`evals/probe.py`: labelled answers kept out of the calibration, graded by the shipped grader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "evals" / "probe.py"


def record(answer: str, score: float, misconceptions: list[int]) -> str:
    return json.dumps({
        "id": f"002-28/probe-{score}", "question_id": "002-28", "tier": "misconception", "answer": answer,
        "expert_score": score, "misconceptions": misconceptions,
    })  # fmt: skip


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_probe_reports_the_bias_and_the_misconceptions_it_flagged(indexed_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "probe.jsonl"
    path.write_text(
        record("I would just restart training from scratch with a new seed.", 0.5, [0]) + "\n\n"
        + record("Roll back to the last good checkpoint and skip the bad batches.", 2.0, []) + "\n"
    )  # fmt: skip
    out = run(str(path), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["answers"] == 2
    assert result["misconceptions_labelled"] == 1 and result["misconceptions_flagged"] == 1
    assert result["other_misconceptions_flagged"] == 0


def test_a_bad_record_is_reported_not_raised(indexed_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "probe.jsonl"
    path.write_text('{"question_id": "002-28"}\n')
    out = run(str(path))
    assert out.returncode == 2 and "probe.jsonl" in out.stderr and "Traceback" not in out.stderr
