"""`interviewer bench`: the figures, their targets, the files it writes; one real quick run (slow)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from interviewer.cli import build_parser
from interviewer.evaluation import bench
from interviewer.evaluation.bench import (
    FIGURES,
    Bench,
    Plan,
    answer_kind,
    judge,
    p50_p95,
    partial_answer,
    pick_answer,
    show,
)
from interviewer.evaluation.load import Child, peak_rss_bytes

SECRET = "sk-test-SECRET-bench-0123456789"


def test_percentiles_and_judging_known_answers() -> None:
    assert p50_p95([1.0, 2.0, 3.0, 4.0]) == (2.5, pytest.approx(3.85))
    assert judge("turn_p95_ms", 150.0) == "PASS" and judge("turn_p95_ms", 150.1) == "MISS"
    assert judge("load_errors", 0.0) == "PASS" and judge("load_errors", 1.0) == "MISS"
    assert judge("turn_p50_ms", 999.0) == "info" and judge("turn_p95_ms", None) == "n/a"
    assert (show(172.34, "ms"), show(0.07632, "x"), show(13.04, "s"), show(0.0, "")) == (
        "172 ms", "0.0763 x", "13.0 s", "0"
    )  # fmt: skip


def test_every_target_of_the_issue_is_judged() -> None:
    targets = {name: limit for name, (_, _, limit) in FIGURES.items() if limit is not None}
    assert targets == {"app_ready_s": 15.0, "app_first_start_s": 2.0, "turn_p95_ms": 150.0,
                       "transcription_rtf": 0.3, "voice_turn_p95_s": 1.5, "load_errors": 0.0,
                       "load_p95_s": 1.0, "app_peak_rss_gb": 1.5}  # fmt: skip


def test_answers_are_reference_partial_and_weak_in_turn(settings) -> None:  # type: ignore[no-untyped-def]
    from interviewer.corpus.bank import load_bank

    bank = load_bank(settings)
    q = bank.get("004-04")
    asks = [{"type": "question", "question_id": q.id, "number": k} for k in (3, 4, 5)]
    assert [pick_answer(bank, 0, ask) for ask in asks] == [
        q.reference,
        partial_answer(q.reference),
        bench.WEAK,
    ]
    assert [answer_kind(1, ask) for ask in asks] == ["partial", "weak", "reference"]  # sessions start apart
    assert partial_answer("One. Two! Three? Four.") == "One. Two!"
    follow = [
        {"type": "follow_up", "question_id": q.id, "point": "Clip gradients at 1.0", "number": k}
        for k in (1, 2)
    ]
    assert [pick_answer(bank, 0, f) for f in follow] == ["Right, clip gradients at 1.0.", bench.SHRUG]


def fake_run(self: Bench) -> None:
    """The measurements, without measuring: every figure gets a value, half of them too big."""
    for i, name in enumerate(FIGURES):
        limit = FIGURES[name][2]
        self.figures[name] = (limit or 1.0) * (2.0 if i % 2 else 0.5)
    self.details["load"] = {"sessions": 16}


@pytest.mark.parametrize(("quick", "stem"), [(True, "bench-quick"), (False, "bench")])
def test_writes_json_and_a_markdown_table_beside_the_targets(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch, capsys, settings, quick: bool, stem: str
) -> None:
    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(Bench, "run", fake_run)
    assert bench.run_bench(settings, argparse.Namespace(quick=quick, json=True)) == 0
    data = json.loads((tmp_path / f"{stem}.json").read_text())
    assert json.loads(capsys.readouterr().out) == data  # --json prints what it wrote
    assert data["quick"] is quick and set(data["figures"]) == set(FIGURES)
    table = (tmp_path / f"{stem}.md").read_text()
    for name, figure in data["figures"].items():
        row = next(line for line in table.splitlines() if line.startswith(f"| {figure['label']} |"))
        limit = FIGURES[name][2]
        expected = "info" if limit is None else "PASS" if figure["value"] <= limit else "MISS"
        assert row.endswith(f"| {expected} |") and figure["result"] == expected
        if limit is not None:
            assert f"<= {limit:g}" in row


def test_a_failed_measurement_is_reported_and_the_others_still_run(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch, settings
) -> None:
    def run(self: Bench) -> None:
        self.step("retrieval", lambda: self.figures.update(retrieval_p50_ms=12.0))
        self.step("transcription", lambda: 1 / 0)
        self.step("grade", lambda: self.figures.update(grade_p50_ms=20.0))

    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(Bench, "run", run)
    assert bench.run_bench(settings, argparse.Namespace(quick=True, json=False)) == 1
    data = json.loads((tmp_path / "bench-quick.json").read_text())
    assert data["errors"] == {"transcription": "ZeroDivisionError: division by zero"}
    assert (
        data["figures"]["grade_p50_ms"]["value"] == 20.0 and data["figures"]["load_p95_s"]["result"] == "n/a"
    )
    assert "transcription: ZeroDivisionError" in (tmp_path / "bench-quick.md").read_text()


def test_the_cli_has_bench_with_quick_and_json() -> None:
    args = build_parser().parse_args(["bench", "--quick", "--json"])
    assert (args.quick, args.json, args.command.name) == (True, True, "bench")
    assert build_parser().parse_args(["bench"]).quick is False


def test_child_lines_and_peak_memory(tmp_path: Path) -> None:
    child = Child(["--help"], tmp_path)
    seconds, _ = child.wait_for(r"^usage: interviewer", timeout=60)
    child.proc.wait(timeout=60)
    child.stop()
    assert 0 < seconds < 60
    assert (peak_rss_bytes(os.getpid()) or 0) > 10_000_000


# The quick bench's every step, on fewer repetitions still: what is tested is that each
# measurement runs and prints its figure. The figures of record come from `interviewer bench`.
SMALL = Plan(cold_starts=1, index_builds=1, reindexes=1, sessions=1, questions=2, grade_questions=3,
             queries=6, speech_s=6.0, speech_reps=1, voice_turns=1, load_sessions=4, load_turns=1)  # fmt: skip


@pytest.mark.slow
def test_the_quick_bench_measures_every_figure_and_shows_no_key(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch, capsys, settings, built_index
) -> None:
    # The bench measures in a fresh directory of its own; here it starts with the bank's rubric
    # vectors that `interviewer index` keeps, so that step loads them instead of embedding
    # 4,275 texts again (20 s of a core; the setup command builds them from nothing).
    # The corpus index is still built from nothing.
    real_mkdtemp = tempfile.mkdtemp

    def seeded(*args: Any, **kwargs: Any) -> str:
        if kwargs.get("prefix") != "interviewer-bench-":
            return real_mkdtemp(*args, **kwargs)
        root = Path(real_mkdtemp(prefix="interviewer-bench-"))
        shutil.copytree(built_index / "cache", root / "base" / "cache")
        return str(root)

    monkeypatch.setattr(bench.tempfile, "mkdtemp", seeded)
    results = tmp_path / "results"
    monkeypatch.setattr(bench, "RESULTS_DIR", results)
    monkeypatch.setattr(bench, "QUICK", SMALL)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code = bench.run_bench(settings, argparse.Namespace(quick=True, json=False))
    data: dict[str, Any] = json.loads((results / "bench-quick.json").read_text())
    assert code == 0 and data["errors"] == {}
    assert [n for n, f in data["figures"].items() if f["value"] is None] == []  # every figure printed
    assert data["details"]["load"]["turns"] == SMALL.load_sessions * SMALL.load_turns
    shown = capsys.readouterr()
    for text in (shown.out, shown.err, *(p.read_text() for p in results.iterdir())):
        assert SECRET not in text
