"""Measure a local instruct LLM as a yes/no verifier of wrong claims (issue 30, lead 4).

    python evals/llm_verifier.py --model PATH.gguf [--threads 2] [--held-out N] [--out DIR]

The question asked is the one a second reader would be asked: given the bank question
and its reference answer, does this answer state something the reference says is
wrong? The verifier's probability is read off the first token of the reply, P(yes) /
(P(yes) + P(no)), with llama.cpp in process, so nothing is sampled and a run repeats.

Two sets, nothing fitted on either:
- the minimal-pair probe (`evals/probes/minimal-pairs.jsonl`, 72 pairs): AUC of the
  verifier's probability for the wrong member against the right one, and how often the
  wrong member's probability is the higher of its pair;
- the held-out split's confident-misconception answers against its strong and partial
  answers (`--held-out N` per tier, the first N questions): AUC, and agreement with the
  expert at probability 0.5 (an answer is wrong when the expert's tier is
  `misconception`).
Seconds per call are reported (p50 / p95): a verify pass costs one call per grade.

The model is the caller's: no download. The figures in the README came from
Qwen2.5-Coder-1.5B-Instruct Q4_K_M (see `evals/llm_sessions.py` for how it installs).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import split_of
from interviewer.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "evals" / "probes" / "minimal-pairs.jsonl"
ANSWERS = ROOT / "evals" / "answers"

SYSTEM = (
    "You are a strict examiner for machine-learning training interviews. You compare a "
    "candidate's answer with the reference answer and say whether the candidate states "
    "anything that is factually wrong. Leaving things out is not wrong."
)
ASK = (
    "Question: {question}\n\nReference answer: {reference}\n\nCandidate's answer: {answer}\n\n"
    "Does the candidate's answer state something that is wrong according to the reference "
    "answer (a reversed direction, swapped roles, a wrong term, a wrong number, or an "
    "over-general claim)? Reply with one word: yes or no."
)


class Verifier:
    """Qwen-style chat prompt, one forward pass, P(yes) from the next-token logits."""

    def __init__(self, model: Path, threads: int) -> None:
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(model), n_ctx=2048, n_threads=threads, verbose=False, seed=0)
        self.yes = self._ids(["yes", "Yes", " yes", " Yes", "YES"])
        self.no = self._ids(["no", "No", " no", " No", "NO"])

    def _ids(self, words: list[str]) -> list[int]:
        ids = {self.llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in words}
        return sorted(ids)

    def p_wrong(self, question: str, reference: str, answer: str) -> float:
        user = ASK.format(question=question, reference=reference, answer=answer)
        prompt = (
            f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )
        tokens = self.llm.tokenize(prompt.encode(), add_bos=False, special=True)
        self.llm.reset()
        self.llm.eval(tokens)
        # without logits_all, llama-cpp-python keeps no scores: read the last row itself
        last = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),))
        logits = last.astype(np.float64)
        top = logits.max()
        yes = sum(math.exp(logits[i] - top) for i in self.yes)
        no = sum(math.exp(logits[i] - top) for i in self.no)
        return yes / (yes + no) if yes + no > 0 else 0.5


def auc(positives: list[float], negatives: list[float]) -> float:
    """Probability that a positive outscores a negative (ties count half)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--held-out", type=int, default=36, help="questions per tier from the held-out split")
    parser.add_argument("--pairs", type=int, default=0, help="only the first N probe pairs (0: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "evals" / "results")
    args = parser.parse_args()

    bank = load_bank(load_settings())
    verifier = Verifier(args.model, args.threads)
    seconds: list[float] = []

    def judge(question_id: str, answer: str) -> float:
        q = bank.get(question_id)
        start = time.perf_counter()
        p = verifier.p_wrong(q.question, q.reference, answer)
        seconds.append(time.perf_counter() - start)
        return p

    pairs = [json.loads(line) for line in PROBE.read_text().splitlines() if line.strip()]
    if args.pairs:
        pairs = pairs[: args.pairs]
    probe_rows = []
    for n, pair in enumerate(pairs, 1):
        right, wrong = judge(pair["question_id"], pair["right"]), judge(pair["question_id"], pair["wrong"])
        probe_rows.append({"id": pair["id"], "kind": pair["kind"], "right": right, "wrong": wrong})
        print(f"probe {n}/{len(pairs)} {pair['kind']:<18} right {right:.2f} wrong {wrong:.2f}", flush=True)

    held: dict[str, list[tuple[str, float]]] = {"misconception": [], "strong": [], "partial": []}
    answers = [
        json.loads(line)
        for f in sorted(ANSWERS.glob("00*.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    for tier in held:
        rows = [a for a in answers if a["tier"] == tier and split_of(a["question_id"]) == "held-out"][
            : args.held_out
        ]
        for a in rows:
            held[tier].append((a["id"], judge(a["question_id"], a["answer"])))
        print(f"held-out {tier}: {len(rows)} answers", flush=True)

    right = [r["right"] for r in probe_rows]
    wrong = [r["wrong"] for r in probe_rows]
    by_kind = {}
    for kind in sorted({r["kind"] for r in probe_rows}):
        rows = [r for r in probe_rows if r["kind"] == kind]
        by_kind[kind] = round(float(np.mean([r["wrong"] > r["right"] for r in rows])), 3)
    bad = [p for _, p in held["misconception"]]
    good = [p for t in ("strong", "partial") for _, p in held[t]]
    agree = np.mean([p >= 0.5 for p in bad] + [p < 0.5 for p in good]) if bad or good else float("nan")
    report = {
        "model": args.model.name,
        "calls": len(seconds),
        "seconds_p50": round(float(np.percentile(seconds, 50)), 2),
        "seconds_p95": round(float(np.percentile(seconds, 95)), 2),
        "probe": {
            "pairs": len(probe_rows),
            "auc_wrong_vs_right": round(auc(wrong, right), 3) if probe_rows else None,
            "wrong_higher_in_pair": round(
                float(np.mean([w > r for w, r in zip(wrong, right, strict=True)])), 3
            )
            if probe_rows
            else None,
            "wrong_flagged_at_0.5": round(float(np.mean([w >= 0.5 for w in wrong])), 3)
            if probe_rows
            else None,
            "right_flagged_at_0.5": round(float(np.mean([r >= 0.5 for r in right])), 3)
            if probe_rows
            else None,
            "wrong_higher_by_kind": by_kind,
        },
        "held_out": {
            "answers": {t: len(v) for t, v in held.items()},
            "auc_misconception_vs_strong_partial": round(auc(bad, good), 3) if bad and good else None,
            "auc_misconception_vs_strong": round(auc(bad, [p for _, p in held["strong"]]), 3)
            if bad and held["strong"]
            else None,
            "agreement_at_0.5": round(float(agree), 3),
            "mean_p": {t: round(float(np.mean([p for _, p in v])), 3) for t, v in held.items() if v},
        },
        "rows": {"probe": probe_rows, "held_out": held},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm-verifier.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
