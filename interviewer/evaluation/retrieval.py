"""Retrieval eval: does `match_questions` put the paraphrased question first?

Reads `evals/retrieval/paraphrases.jsonl` (queries written for this purpose,
not copied from the bank). A hit counts when it is the target question or
one of its `also_accept` ids (the same question asked in another document).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from interviewer.corpus.bank import load_bank
from interviewer.corpus.store import Store
from interviewer.settings import REPO_ROOT, Settings

PARAPHRASES = REPO_ROOT / "evals" / "retrieval" / "paraphrases.jsonl"


class Paraphrase(BaseModel):
    query: str
    question_id: str
    also_accept: list[str] = Field(default_factory=list)


def load_paraphrases(path: Path = PARAPHRASES) -> list[Paraphrase]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Paraphrase.model_validate_json(line) for line in lines if line.strip()]


def evaluate_retrieval(settings: Settings, path: Path = PARAPHRASES) -> dict[str, object]:
    store = Store(settings)
    store.ensure_index(load_bank(settings))
    items = load_paraphrases(path)
    top1 = top3 = 0
    misses = []
    for item in items:
        ranked = [h.question_id for h in store.match_questions(item.query, k=3)]
        ok = {item.question_id, *item.also_accept}
        top1 += bool(ranked) and ranked[0] in ok
        top3 += any(r in ok for r in ranked)
        if not ranked or ranked[0] not in ok:
            misses.append({"query": item.query, "want": item.question_id, "got": ranked})
    n = len(items)
    return {"n": n, "top1": top1 / n, "top3": top3 / n, "misses": misses}


if __name__ == "__main__":
    from interviewer.settings import load_settings

    print(json.dumps(evaluate_retrieval(load_settings()), indent=1))
