"""`evals/probe.py`: labelled answers kept out of the calibration, graded by the shipped grader."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from eval_scripts import EVALS, run_script

SCRIPT = EVALS / "probe.py"


def record(answer: str, score: float, misconceptions: list[int]) -> str:
    return json.dumps({
        "id": f"002-28/probe-{score}", "question_id": "002-28", "tier": "misconception", "answer": answer,
        "expert_score": score, "misconceptions": misconceptions,
    })  # fmt: skip


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script(SCRIPT, *args)


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


def test_whole_answer_sets_also_get_agreement_figures(indexed_home: Path, tmp_path: Path) -> None:
    rows = [
        {"id": "002-28/strong", "question_id": "002-28", "tier": "strong", "expert_score": 4.5,
         "answer": "Roll back to the last good checkpoint, skip the batches that caused the spike, "
                   "and lower the learning rate before resuming."},
        {"id": "002-28/empty", "question_id": "002-28", "tier": "empty", "expert_score": 0.0,
         "answer": "No idea, sorry."},
        {"id": "002-28/paraphrase", "question_id": "002-28", "tier": "paraphrase", "expert_score": 4.5,
         "paraphrase_of": "002-28/strong",
         "answer": "Go back to the last healthy checkpoint, leave out the batches behind the spike, "
                   "and resume with a lower learning rate."},
    ]  # fmt: skip
    path = tmp_path / "sets.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = run(str(path), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["tier_ordering"] == 1.0  # the strong answer above the empty one
    assert result["paraphrase_pairs"] == 1 and result["paraphrase_invariance"] == 1.0
    assert "qwk" in result
