"""Choose the second reader's thresholds on the calibration split (issue 30, lead 4).

    INTERVIEWER_LLM_GGUF=PATH.gguf python evals/verify_sweep.py [--backend llama-cpp] [--write]

The embedded grader's analysis of every calibration answer, and of the spoken rubric
twins that `calibrate.py` also fits on, is taken once; the second reader
(`interviewer/grading/verify.py`) reads each credited point and each near misconception
once (answers are kept in `evals/results/verify-reads-<model>.json`, so a rerun asks the
model only what is new); then every combination of the three thresholds in
`SecondReaderThresholds` is decided (`decision.decide`, pure) and scored by the objective
`calibrate.py` uses: QWK + 0.1 x paraphrase invariance + the spoken-twin term. The best is
printed with its QWK, tier ordering, invariance and misconception bias, and `--write`
stores it in `interviewer/grading/calibration.json` (nothing else there changes; the
default grader, with no second reader, grades exactly as before).

Nothing held out is read here: the held-out split and the probes are measured afterwards
with `interviewer eval --verify` and `evals/minimal_pairs.py --verify`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import TWIN_WEIGHT, twin_answers

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import (
    load_answers,
    quadratic_weighted_kappa,
    tier_ordering,
)
from interviewer.grading.calibration import (
    CALIBRATION_FILE,
    Calibration,
    SecondReaderThresholds,
    load_calibration,
)
from interviewer.grading.decision import decide
from interviewer.grading.rubric import RubricGrader
from interviewer.grading.verify import SecondReader, second_reader
from interviewer.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
INVARIANCE_WEIGHT = 0.1
GRID = {
    "point_denied": [0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45],
    "misconception_said": [1.01, 0.75, 0.7, 0.65, 0.6, 0.55],
    "misconception_denied": [0.0, 0.3, 0.35, 0.4, 0.45, 0.5],
    "cap": [5.0, 3.0, 2.5, 2.0],
}


def reads_file(reader: SecondReader) -> Path:
    model = "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in reader.backend.model)
    return ROOT / "evals" / "results" / f"verify-reads-{model}.json"


def load_reads(reader: SecondReader) -> None:
    path = reads_file(reader)
    if path.exists():
        for claim, sentence, p in json.loads(path.read_text(encoding="utf-8")):
            reader.memo[(claim, sentence)] = p


def save_reads(reader: SecondReader) -> None:
    path = reads_file(reader)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [[c, s, p] for (c, s), p in reader.memo.items()]
    path.write_text(json.dumps(rows, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="llama-cpp", help="the second reader's LLM backend")
    parser.add_argument("--write", action="store_true", help="store the best thresholds in calibration.json")
    args = parser.parse_args()

    settings = load_settings()
    bank = load_bank(settings)
    grader = RubricGrader(settings)  # no second reader: its analyses are read below
    reader = second_reader(load_settings(verify=args.backend))
    assert reader is not None
    load_reads(reader)
    calibration = load_calibration()
    answers = load_answers(split="calibration")
    questions = [bank.get(a.question_id) for a in answers]
    twins = twin_answers(bank, answers)

    def read(question, text):  # type: ignore[no-untyped-def]
        analysis = grader.analyze(question, text)
        if not analysis.sentences:
            return analysis
        reads = reader.read(question, analysis, decide(question, analysis, calibration))
        return replace(analysis, point_reads=reads.key_points, misconception_reads=reads.misconceptions)

    start = time.perf_counter()
    analyses = []
    for n, (q, a) in enumerate(zip(questions, answers, strict=True), 1):
        analyses.append(read(q, a.answer))
        if n % 50 == 0:
            save_reads(reader)
            print(f"{n}/{len(answers)} answers read, {len(reader.memo)} reads, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr)  # fmt: skip
    twin_analyses = [(q, read(q, right), read(q, wrong)) for q, right, wrong in twins]
    save_reads(reader)
    print(f"{len(twins)} twin pairs; {len(reader.memo)} reads in all", file=sys.stderr)

    expert = [a.expert_score for a in answers]
    row_of = {a.id: i for i, a in enumerate(answers)}
    pairs = [(i, row_of[a.paraphrase_of]) for i, a in enumerate(answers) if a.paraphrase_of in row_of]

    def measure(thresholds: SecondReaderThresholds) -> dict[str, float]:
        c = calibration.model_copy(update={"second_reader": thresholds})
        scores = [decide(q, an, c).score for q, an in zip(questions, analyses, strict=True)]
        invariance = float(np.mean([abs(scores[i] - scores[j]) <= 0.5 for i, j in pairs]))
        graded = [(decide(q, r, c).score, decide(q, w, c).score) for q, r, w in twin_analyses]
        twin_term = (np.mean([r > w for r, w in graded]) + np.mean([w < 2.5 for _, w in graded])) / 2
        qwk = quadratic_weighted_kappa(expert, scores)
        bias = {
            tier: float(np.mean([s - a.expert_score for s, a in zip(scores, answers, strict=True) if a.tier == tier]))
            for tier in ("misconception", "strong", "model-paraphrase", "partial")
        }  # fmt: skip
        return {
            "objective": qwk + INVARIANCE_WEIGHT * invariance + TWIN_WEIGHT * float(twin_term),
            "qwk": qwk,
            "ordering": tier_ordering(list(zip(answers, scores, strict=True))),
            "paraphrase": invariance,
            "twins_right_higher": float(np.mean([r > w for r, w in graded])),
            "twins_wrong_below_2.5": float(np.mean([w < 2.5 for _, w in graded])),
            **{f"bias_{t}": b for t, b in bias.items()},
        }

    results = []
    for values in itertools.product(*GRID.values()):
        thresholds = SecondReaderThresholds(**dict(zip(GRID, values, strict=True)))
        results.append((measure(thresholds), thresholds))
    results.sort(key=lambda r: -r[0]["objective"])
    baseline = measure(SecondReaderThresholds())
    show = lambda m: " ".join(f"{k} {v:.3f}" for k, v in m.items())  # noqa: E731
    print("no second reader:", show(baseline))
    for m, t in results[:8]:
        print(t.model_dump(exclude={"fitted_on"}), show(m))
    best = results[0][1].model_copy(
        update={
            "fitted_on": f"{reader.backend.model}, calibration split ({len(answers)} answers, {len(twins)} twin pairs)"
        }
    )
    if args.write:
        stored = Calibration.read()
        stored.model_copy(update={"second_reader": best}).write(CALIBRATION_FILE)
        print(f"wrote {best.model_dump()} to {CALIBRATION_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
