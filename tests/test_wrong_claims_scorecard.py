"""`evals/wrong_claims.py`: each target of the wrong-claims issue is judged the way the issue
states it (at least, at most), and the table names every target it misses. The full run (the
held-out eval and both probes, about 1.5 minutes) is a benchmark, not a test: its figures are in
the closing notes and held by the eval's and the probes' own floors."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "evals" / "wrong_claims.py"


def scorecard() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wrong_claims", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_figure_passes_on_its_targets_side_and_is_only_reported_without_one() -> None:
    Figure = scorecard().Figure
    assert Figure("QWK", 0.922, 0.90).result == "PASS"
    assert Figure("tier ordering", 0.962, 0.97).result == "MISS"
    assert Figure("misconception bias", 1.14, 0.5, "<=").result == "MISS"
    assert Figure("p95 (ms)", 60.0, 60.0, "<=").result == "PASS"  # the target itself meets it
    assert Figure("strong-answer bias", -0.53, None).result == "info"
    assert Figure("bias", math.nan, 0.5, "<=").result == "n/a"


def test_the_table_shows_each_figure_beside_its_target_and_lists_the_misses() -> None:
    module = scorecard()
    Figure = module.Figure
    table = module.markdown(
        [
            Figure("QWK", 0.922, 0.90),
            Figure("flagged", 34, 60, ">=", "34 of 79"),
            Figure("false flags", 3, None),
        ]
    )
    assert "| QWK | 0.922 | >= 0.9 | PASS |" in table
    assert "| flagged | 34 of 79 | >= 60 | MISS |" in table
    assert "| false flags | 3 | — | info |" in table
    assert table.rstrip().endswith("1 target(s) missed: flagged")
