"""Train the polarity reader (`interviewer/models/polarity.py`) on minimal pairs.

    python evals/train_polarity.py            # dev report: trains on 4/5 of the questions, scores the rest
    python evals/train_polarity.py --final    # trains on all of them and writes the shipped adapters
    python evals/train_polarity.py --final --edits --epochs 3 --out /tmp/p.safetensors
                                              # + sentences edited to say claims wrong (an experiment)
    python evals/train_polarity.py --final --written --epochs 5 --out /tmp/w.safetensors
                                              # + answer sentences written for each claim (an experiment)

Only questions of the *calibration* split are trained on, so the held-out split and
every probe stay honest. For each of their claims (a core key point, or a
misconception) the rubric holds its twin (the same sentence with the critical
words set the other way: `twin` in `corpus/rubrics/*.yaml`), and
`evals/polarity/spoken.jsonl` holds both said out loud. The pairs:

- (claim, claim said out loud) and (twin, twin said out loud): states;
- (claim, twin said out loud), (twin, claim said out loud), (claim, twin), (twin, claim): contradicts;
- (claim, one of its accepted alternatives): states;
- (claim, another claim of the question or of another question, said out loud): neither;
- the said-out-loud claim or twin joined in one sentence with another claim of the question
  ("..., and ..."): as for the claim or twin alone, since answers say several things at once.

The base is the grader's MiniLM with LoRA adapters (rank 8) on every attention and
feed-forward layer and a three-way head on the mean-pooled tokens: about 333k
trained parameters, a few minutes on two CPU cores. Deterministic (seeded, one
order). The report also scores the held-out split's rubric twins, which are never
trained on: (claim, twin) should read "contradicts", (claim, alternative) "states".
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModel, AutoTokenizer  # noqa: E402

from interviewer.corpus.bank import load_bank  # noqa: E402
from interviewer.evaluation.grades import load_answers, split_of  # noqa: E402
from interviewer.models.embeddings import embedder_for, resolve_model_path  # noqa: E402
from interviewer.models.polarity import ADAPTER_FILE, BASE_MODEL, LABELS, MAX_TOKENS, lora_targets, mean_pool  # noqa: E402
from interviewer.settings import Settings  # noqa: E402

sys.path.insert(0, str(ROOT / "evals"))
from polarity_pairs import benign, load_edits, perturb  # noqa: E402

SPOKEN = ROOT / "evals" / "polarity" / "spoken.jsonl"
WRITTEN = ROOT / "evals" / "polarity" / "written.jsonl"  # answer sentences stating each claim, and wrong ones
REPORTS = ROOT / "evals" / "results"  # polarity-dev.json, or polarity-final.json with --final
STATES, CONTRADICTS, NEITHER = range(3)
RANK, ALPHA = 8, 16


class LoRALinear(torch.nn.Module):
    def __init__(self, base: torch.nn.Linear, rank: int = RANK, alpha: int = ALPHA) -> None:
        super().__init__()
        self.base = base
        self.scale = alpha / rank
        self.lora_a = torch.nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
        self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, rank))
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scale * (self.drop(x) @ self.lora_a.T @ self.lora_b.T)


def _joined(mine: str, other: str, rng: random.Random) -> str:
    """Two claims said in one sentence, in either order."""
    if rng.random() < 0.5:
        return f"{mine.rstrip('.')}, and {other[0].lower()}{other[1:]}."
    return f"{other}, and {mine[0].lower()}{mine[1:]}"


def claims_of(question) -> list[dict]:  # type: ignore[no-untyped-def]
    """Each claim with a twin: its text, twin, alternatives and kind."""
    out = []
    for i, kp in enumerate(question.key_points):
        if kp.twin:
            out.append(
                {
                    "kind": "key_point",
                    "index": i,
                    "text": kp.text,
                    "twin": kp.twin,
                    "alternatives": kp.alternatives,
                }
            )
    for i, m in enumerate(question.rubric.misconceptions):
        if m.twin:
            out.append(
                {
                    "kind": "misconception",
                    "index": i,
                    "text": m.text,
                    "twin": m.twin,
                    "alternatives": m.alternatives,
                }
            )
    return out


def build_pairs(questions, spoken: dict, rng: random.Random) -> list[tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    pairs: list[tuple[str, str, int]] = []
    said_pool = [s for entry in spoken.values() for s in (entry["spoken_claim"], entry["spoken_twin"])]
    for q in questions:
        claims = claims_of(q)
        for c in claims:
            s = spoken.get((q.id, c["kind"], c["index"]))
            t, w = c["text"], c["twin"]
            pairs += [(t, w, CONTRADICTS), (w, t, CONTRADICTS)]
            if s:
                st, sw = s["spoken_claim"], s["spoken_twin"]
                pairs += [(t, st, STATES), (w, sw, STATES), (t, sw, CONTRADICTS), (w, st, CONTRADICTS)]
            for alt in c["alternatives"][:2]:
                pairs.append((t, alt, STATES))
            others = [o for o in claims if o is not c]
            said_others = [
                so["spoken_claim"] for o in others if (so := spoken.get((q.id, o["kind"], o["index"])))
            ]
            if s and said_others:
                # answers say several things in one sentence: the others' words are no contradiction
                other = rng.choice(said_others).rstrip(".")
                pairs += [(t, _joined(st, other, rng), STATES), (t, _joined(sw, other, rng), CONTRADICTS),
                          (w, _joined(sw, other, rng), STATES), (w, _joined(st, other, rng), CONTRADICTS)]  # fmt: skip
            for o in rng.sample(others, min(2, len(others))):
                so = spoken.get((q.id, o["kind"], o["index"]))
                pairs.append((t, so["spoken_claim"] if so else o["text"], NEITHER))
            if said_pool:
                pairs.append((t, rng.choice(said_pool), NEITHER))
    return pairs


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+\s*(?:[-*•]\s+)?", text)
    return [p.strip(" -*•") for p in parts if len(p.split()) >= 4]


def edited_pairs(questions, spoken: dict, answers, rng: random.Random) -> list[tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    """Pairs from sentences that state a claim, and those sentences edited to say it wrong.

    The sentences: each claim said out loud, its reference sentence, and the calibration
    answers' sentences that the expert marked as covering it (or stating a misconception),
    each found as the sentence closest to the claim under MiniLM. See `polarity_pairs`.
    """
    edits = load_edits()
    embedder = embedder_for(Settings())
    by_question: dict[str, list] = {}
    for a in answers:
        by_question.setdefault(a.question_id, []).append(a)
    pairs: list[tuple[str, str, int]] = []
    statements: list[tuple[str, str, str]] = []  # (question id, claim, sentence that states it)
    for q in questions:
        claims = [(kp.text, "key_point", i) for i, kp in enumerate(q.key_points)]
        claims += [(m.text, "misconception", i) for i, m in enumerate(q.rubric.misconceptions)]
        said: list[set[str]] = [set() for _ in claims]
        for n, (_, kind, i) in enumerate(claims):
            if s := spoken.get((q.id, kind, i)):
                said[n].add(s["spoken_claim"])
        claim_vecs = embedder.encode([c for c, _, _ in claims])
        sources = [(_sentences(q.reference), {n for n, c in enumerate(claims) if c[1] == "key_point"})]
        for a in by_question.get(q.id, []):
            marked = {n for n, (_, kind, i) in enumerate(claims)
                      if (kind == "key_point" and i in a.covers) or (kind == "misconception" and i in a.misconceptions)}  # fmt: skip
            sources.append((_sentences(a.answer), marked))
        for sentences, marked in sources:
            if not sentences or not marked:
                continue
            sims = claim_vecs @ embedder.encode(sentences).T
            for n in marked:
                j = int(sims[n].argmax())
                if sims[n, j] >= 0.5:
                    said[n].add(sentences[j])
        for n, (claim, _, _) in enumerate(claims):
            for sentence in sorted(said[n]):
                statements.append((q.id, claim, sentence))
                pairs.append((claim, sentence, STATES))
                if rng.random() < 0.3:
                    pairs.append((claim, benign(sentence, edits, rng), STATES))
                wrong = perturb(sentence, claim, edits, rng)
                for _, edited in rng.sample(wrong, min(2, len(wrong))):
                    pairs.append((claim, edited, CONTRADICTS))
                others = [s for m, ss in enumerate(said) if m != n for s in ss if s not in said[n]]
                if others:
                    pairs.append((claim, rng.choice(others), NEITHER))
            claim_wrong = perturb(claim, claim, edits, rng)
            if claim_wrong and said[n]:
                edited = rng.choice(claim_wrong)[1]
                pairs.append((edited, rng.choice(sorted(said[n])), CONTRADICTS))
    for qid, claim, _ in statements[::3]:  # a sentence about another question states neither
        other = rng.choice(statements)
        if other[0] != qid:
            pairs.append((claim, other[2], NEITHER))
    return list(dict.fromkeys(pairs))


def written_pairs(questions, written: dict, rng: random.Random) -> list[tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    """Pairs from `written.jsonl`: for each claim, answer sentences that state it and as many
    that say it wrong (most of them the same sentence with only the critical words changed),
    and some that use its words to say something else, written for the purpose by writers
    who never saw the grader.

    - (claim, sentence stating it): states; (twin, that sentence): contradicts;
    - (claim, wrong sentence): contradicts (nothing is said about the twin: a wrong entity
      or a wrong number is not the twin either);
    - either joined in one sentence with another claim's sentence: as alone;
    - (claim, a sentence on its topic, in its own words, that says something else): neither;
    - (claim, a sentence stating another claim of the question): neither.
    """
    pairs: list[tuple[str, str, int]] = []
    for q in questions:
        claims = claims_of(q)
        rows = {(c["kind"], c["index"]): written.get((q.id, c["kind"], c["index"])) for c in claims}
        for c in claims:
            row = rows[(c["kind"], c["index"])]
            if not row:
                continue
            t, w = c["text"], c["twin"]
            others = [
                s for key, r in rows.items() if r and key != (c["kind"], c["index"]) for s in r["states"]
            ]
            for s in row["states"]:
                pairs += [(t, s, STATES), (w, s, CONTRADICTS)]
            for wrong in row["contradicts"]:
                pairs.append((t, wrong["sentence"], CONTRADICTS))
            for other_thing in row["neither"]:  # the claim's own words, saying something else
                pairs.append((t, other_thing, NEITHER))
            if others:
                pairs.append(
                    (t, _joined(rng.choice(row["states"]), rng.choice(others).rstrip("."), rng), STATES)
                )
                wrong = rng.choice(row["contradicts"])["sentence"]
                pairs.append((t, _joined(wrong, rng.choice(others).rstrip("."), rng), CONTRADICTS))
                pairs += [(t, s, NEITHER) for s in rng.sample(others, min(2, len(others)))]
    return list(dict.fromkeys(pairs))


def read_written() -> dict:
    """(question id, kind, index) -> the claim's sentences, its rows merged (a claim may have several)."""
    out: dict = {}
    if WRITTEN.is_file():
        for line in WRITTEN.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                merged = out.setdefault((row["question_id"], row["kind"], row["index"]),
                                        {"states": [], "contradicts": [], "neither": []})  # fmt: skip
                for field in merged:
                    merged[field] += row.get(field, [])
    return out


def read_spoken() -> dict:
    out = {}
    for line in SPOKEN.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[(row["question_id"], row["kind"], row["index"])] = row
    return out


def make_model(path: str) -> tuple[torch.nn.Module, torch.nn.Linear, list[tuple[str, LoRALinear]]]:
    model = AutoModel.from_pretrained(path)
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = []
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear) and lora_targets(name):
            parent = model.get_submodule(name.rsplit(".", 1)[0])
            lora = LoRALinear(module)
            setattr(parent, name.rsplit(".", 1)[1], lora)
            wrapped.append((name, lora))
    head = torch.nn.Linear(model.config.hidden_size, len(LABELS))
    return model, head, wrapped


def length_batches(pairs: list[tuple[str, str, int]], rng: random.Random, size: int = 32) -> list[list]:
    """Shuffled batches of pairs of similar length (less padding, about 1.5x faster on CPU)."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    batches = []
    for i in range(0, len(order), size * 50):
        chunk = sorted(order[i : i + size * 50], key=lambda j: len(pairs[j][0]) + len(pairs[j][1]))
        batches += [[pairs[j] for j in chunk[k : k + size]] for k in range(0, len(chunk), size)]
    rng.shuffle(batches)
    return batches


def logits(model, head, tokenizer, batch: list[tuple[str, str, int]]) -> torch.Tensor:  # type: ignore[no-untyped-def]
    enc = tokenizer([b[0] for b in batch], [b[1] for b in batch], padding=True, truncation="only_second",
                    max_length=MAX_TOKENS, return_tensors="pt")  # fmt: skip
    hidden = model(**enc).last_hidden_state
    return head(mean_pool(hidden, enc["attention_mask"]))


def accuracy(model, head, tokenizer, pairs: list[tuple[str, str, int]]) -> dict:  # type: ignore[no-untyped-def]
    model.eval()
    correct = {label: [0, 0] for label in range(3)}
    with torch.no_grad():
        for i in range(0, len(pairs), 64):
            batch = pairs[i : i + 64]
            pred = logits(model, head, tokenizer, batch).argmax(dim=-1).tolist()
            for (_c, _s, y), p in zip(batch, pred, strict=True):
                correct[y][0] += int(p == y)
                correct[y][1] += 1
    model.train()
    total = sum(c for c, _ in correct.values()), sum(n for _, n in correct.values())
    return {
        "accuracy": round(total[0] / max(total[1], 1), 3),
        "pairs": total[1],
        **{LABELS[y]: f"{c}/{n}" for y, (c, n) in correct.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--final", action="store_true", help="train on every calibration question and write the adapters"
    )
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument(
        "--edits",
        action="store_true",
        help="add sentences edited to say claims wrong (evals/polarity_pairs.py)",
    )
    parser.add_argument(
        "--written",
        action="store_true",
        help="add the written answer sentences (evals/polarity/written.jsonl) and batch by length (an experiment)",
    )
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--out", type=Path, default=ADAPTER_FILE)
    parser.add_argument("--save", action="store_true", help="write the adapters to --out after a dev run too")
    parser.add_argument(
        "--half",
        type=int,
        choices=(0, 1),
        help="train on every other calibration question only (0: the 1st, 3rd, ...; 1: the 2nd, 4th, ...), "
        "for a cross-fitted reader",
    )
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    rng = random.Random(0)
    bank = list(load_bank(Settings()))
    calibration = [q for q in bank if split_of(q.id) == "calibration"]
    held_out = [q for q in bank if split_of(q.id) == "held-out"]
    spoken = read_spoken()
    train_q = calibration if args.final else [q for n, q in enumerate(calibration) if n % 5]
    if args.half is not None:
        train_q = [q for n, q in enumerate(calibration) if n % 2 == args.half]
    dev_q = [] if args.final else [q for n, q in enumerate(calibration) if n % 5 == 0]
    train = build_pairs(train_q, spoken, rng)
    dev = build_pairs(dev_q, spoken, random.Random(1))
    # an experiment, not the shipped reader: see evals/GRADER_LOG.md (6 December, written sentences)
    if args.written:
        written = read_written()
        train += written_pairs(train_q, written, rng)
        dev_written = written_pairs(dev_q, written, random.Random(1))
    else:
        dev_written = []
    # the held-out split's reference sentences, edited: never trained on (no answers, nothing said)
    held_out_edits = edited_pairs(held_out, {}, [], random.Random(2)) if args.edits else []
    if args.edits:  # an experiment, not the shipped reader: see evals/GRADER_LOG.md (rubric-20, not kept)
        answers = load_answers(split="calibration")
        train += edited_pairs(train_q, spoken, answers, rng)
        dev += edited_pairs(dev_q, spoken, answers, random.Random(1))
    unseen = [(c["text"], c["twin"], CONTRADICTS) for q in held_out for c in claims_of(q)]
    unseen += [(c["text"], a, STATES) for q in held_out for c in claims_of(q) for a in c["alternatives"][:1]]
    path = resolve_model_path(BASE_MODEL)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model, head, wrapped = make_model(path)
    params = [p for _, m in wrapped for p in (m.lora_a, m.lora_b)] + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    steps = args.epochs * math.ceil(len(train) / 32)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 30) * max(0.0, 1 - s / steps)
    )
    print(f"{len(train)} training pairs ({len(train_q)} questions), {len(dev)} dev, {len(unseen)} held-out twins; "
          f"{sum(p.numel() for p in params):,} trained parameters")  # fmt: skip
    t0 = time.time()
    model.train()
    for epoch in range(args.epochs):
        total = 0.0
        if args.written:
            batches = length_batches(train, random.Random(epoch))
        else:  # the shipped reader's order
            order = list(range(len(train)))
            random.Random(epoch).shuffle(order)
            batches = [[train[j] for j in order[i : i + 32]] for i in range(0, len(order), 32)]
        for batch in batches:
            loss = torch.nn.functional.cross_entropy(
                logits(model, head, tokenizer, batch), torch.tensor([b[2] for b in batch])
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += float(loss.detach()) * len(batch)
        print(f"epoch {epoch + 1}: loss {total / len(train):.4f} ({time.time() - t0:.0f} s)", flush=True)
    report = {
        "final": args.final,
        "train_pairs": len(train),
        "train_questions": len(train_q),
        "seconds": round(time.time() - t0),
        "train": accuracy(model, head, tokenizer, train),
        "held_out_twins": accuracy(model, head, tokenizer, unseen),
    }
    if held_out_edits:
        report["held_out_edits"] = accuracy(model, head, tokenizer, held_out_edits)
    if dev:
        report["dev"] = accuracy(model, head, tokenizer, dev)
    if dev_written:
        report["dev_written"] = accuracy(model, head, tokenizer, dev_written)
    print(json.dumps(report, indent=1))
    name = "polarity-final.json" if args.final else "polarity-dev.json"
    reports = REPORTS
    if args.half is not None or args.out != ADAPTER_FILE:  # an experiment's report stays beside its adapters
        name, reports = args.out.with_suffix(".json").name, args.out.parent
    reports.mkdir(parents=True, exist_ok=True)
    (reports / name).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.final or args.save:
        tensors = {"lora.scale": torch.tensor(wrapped[0][1].scale)}
        for name, m in wrapped:
            tensors[f"{name}.lora_a"] = m.lora_a.detach().contiguous()
            tensors[f"{name}.lora_b"] = m.lora_b.detach().contiguous()
        tensors["head.weight"] = head.weight.detach().contiguous()
        tensors["head.bias"] = head.bias.detach().contiguous()
        save_file(tensors, str(args.out))
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
