"""`evals/text_readings.py`: the text readings measured on the calibration split's written
sentences, the floors that hold them (what the README and the grader's log quote)."""

from __future__ import annotations

import json
from pathlib import Path

from eval_scripts import EVALS, run_script

SCRIPT = EVALS / "text_readings.py"


def test_the_text_readings_read_wrong_sentences_and_almost_no_right_one(tmp_path: Path) -> None:
    """On rubric-31: 184 of the 1,176 wrong sentences read as their point said wrong, 1 of the
    1,176 right ones (3 read as another point of their question said wrong)."""
    out = run_script(SCRIPT, "--json", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["wrong_total"] == result["right_total"] == 1176
    every = result["readings"]["any reading"]
    assert sum(every["wrong"].values()) >= 180
    assert every["right_own_point"] <= 1 and every["right_any_point"] <= 3
    for name in ("roles", "named roles", "other name", "number roles"):
        assert result["readings"][name]["right_any_point"] == 0, name
    assert (tmp_path / "text-readings.md").read_text().startswith("# Text readings")
