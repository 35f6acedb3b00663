"""`evals/external.py`: the free-reference grader checked on any human-graded short-answer CSV."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import numpy as np
from eval_scripts import EVALS, run_script

SCRIPT = EVALS / "external.py"
ROWS = [  # question, reference, answer, human score (0-5)
    ("Why use gradient clipping?", "It caps the gradient norm so one bad batch cannot blow up the update.",
     "It limits the norm of the gradient so that a single huge gradient cannot wreck the weights.", 5),
    ("Why use gradient clipping?", "It caps the gradient norm so one bad batch cannot blow up the update.",
     "To make training faster.", 1),
    ("What does warmup do?", "It ramps the learning rate up from near zero over the first steps.",
     "The learning rate starts near zero and grows linearly during the first few thousand steps.", 5),
    ("What does warmup do?", "It ramps the learning rate up from near zero over the first steps.",
     "I am not sure.", 0),
]  # fmt: skip


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script(SCRIPT, *args)


def write_graded(path: Path) -> Path:
    """ROWS as a CSV in the Mohler layout."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "desired_answer", "student_answer", "score_avg"])
        w.writerows(ROWS)
    return path


def test_human_graded_answers_are_scored_and_compared(indexed_home: Path, tmp_path: Path) -> None:
    path = write_graded(tmp_path / "graded.csv")
    out = run(str(path), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["answers"] == 4 and result["questions"] == 2
    assert result["pearson"] > 0.8  # right answers above wrong ones on both questions


def test_a_file_without_the_named_columns_is_refused_with_the_fix(indexed_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text(
        "q,ref,ans,mark\n"
        "Why warm up?,The learning rate ramps up from near zero.,It starts the LR small and raises it.,5\n"
        "Why warm up?,The learning rate ramps up from near zero.,No idea.,0\n"
        "Why warm up?,.,A row without a usable reference is skipped and named.,3\n"
    )
    out = run(str(path))
    assert out.returncode == 2 and "--question" in out.stderr
    out = run(str(path), "--question", "q", "--reference", "ref", "--answer", "ans", "--score", "mark",
              "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["answers"] == 2 and [s[:7] for s in result["skipped"]] == ["line 4:"]


def test_two_raters_are_compared_with_each_other_and_with_the_grader(
    indexed_home: Path, tmp_path: Path
) -> None:
    path = tmp_path / "two-raters.csv"
    first = [5, 1, 4, 0]
    second = [4, 2, 5, 0]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "desired_answer", "student_answer", "score_avg", "me", "other"])
        w.writerows([(*row[:3], (a + b) / 2, a, b) for row, a, b in zip(ROWS, first, second, strict=True)])
    out = run(str(path), "--raters", "me,other", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["human_human_pearson"] == round(float(np.corrcoef(first, second)[0, 1]), 3)
    assert result["mean_me"] == 2.5 and result["mean_other"] == 2.75
    assert result["pearson_vs_me"] > 0.8 and result["pearson_vs_other"] > 0.8
    assert {"qwk_vs_me", "qwk_vs_other", "human_human_qwk"} <= set(result)


def test_raters_must_be_two_existing_columns(indexed_home: Path, tmp_path: Path) -> None:
    path = write_graded(tmp_path / "graded.csv")
    out = run(str(path), "--raters", "me")
    assert out.returncode == 2 and "two column names" in out.stderr
    out = run(str(path), "--raters", "me,other")
    assert out.returncode == 2 and "'me'" in out.stderr and "'other'" in out.stderr
