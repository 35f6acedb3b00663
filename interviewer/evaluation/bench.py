"""`interviewer bench [--quick] [--json]`: speed and memory on this machine, against the targets.

Everything runs in a fresh temporary data directory (never the user's), on the
embedded `rubric` backend, and writes `evals/results/bench.json` and
`bench.md` (`bench-quick.*` with `--quick`): each figure beside its target
and PASS or MISS. A figure without a target is shown as `info`.

    index build (fresh home) and no-op re-index        in process
    retrieval, grade, per-turn latency through the graph (SessionManager.send)
    transcription real-time factor (espeak-ng + sox speech, faster-whisper)
    voice turn: end of a spoken answer -> the interviewer's next line ready to play, and the
      voice's real-time factor (transcription, grade, next line, speech synthesis)
    cold start: terminal to the first question; app to HTTP 200    bench_load.py
    16 sessions at once through the app's API (gradio_client); the app's peak RSS

Answers are realistic: the bank's reference answers, partial ones (the first
half of the reference's sentences) and weak ones, in turn; follow-ups get
the missed point or a shrug. This module profiles nothing (use py-spy).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from interviewer.corpus.bank import load_bank
from interviewer.corpus.store import Store
from interviewer.evaluation.load import (
    App,
    first_answer_s,
    first_session_s,
    make_speech,
    peak_rss_bytes,
    run_load,
    terminal_cold_start,
)
from interviewer.grading.rubric import RubricGrader
from interviewer.interview.phrasing import spoken_line, spoken_parts
from interviewer.interview.session import AudioAnswer, SessionManager, SessionOptions
from interviewer.models.embeddings import embedder_for
from interviewer.settings import REPO_ROOT, Settings, default_results_dir
from interviewer.speech.transcription import Transcriber, question_terms
from interviewer.speech.voice import speak, voice_for

RESULTS_DIR: Path | None = None  # None: --out, else evals/results in a checkout, else the data dir
KINDS = ("reference", "partial", "weak")
WEAK = "I would probably just lower the learning rate a bit and train for longer."
SHRUG = "I'm not sure about that part; maybe it depends on the batch size."
# Before each timed answer the bench waits this long, standing in for the candidate reading
# the prompt (the session embeds its rubrics in the background meanwhile). The load test
# does not wait: there every user answers the moment the reply arrives.
READ_S = 0.5


@dataclass(frozen=True)
class Plan:
    """How many times each thing is measured (the full bench, or --quick)."""

    cold_starts: int
    index_builds: int
    reindexes: int
    sessions: int  # in-process sessions for the per-turn latency
    questions: int  # per session
    grade_questions: int  # questions graded alone, each with three answers
    queries: int  # retrieval queries (evals/retrieval/paraphrases.jsonl)
    speech_s: float  # length of the generated speech
    speech_reps: int
    voice_turns: int  # spoken answers for the voice-turn latency
    load_sessions: int
    load_turns: int


FULL = Plan(3, 2, 3, 6, 5, 30, 48, 45.0, 3, 8, 16, 5)
QUICK = Plan(1, 1, 1, 2, 3, 8, 16, 15.0, 1, 2, 16, 2)

# figure -> (label, unit, target: the most it may be, or None for a figure shown for information)
FIGURES: dict[str, tuple[str, str, float | None]] = {
    "terminal_first_question_s": ("cold start: terminal, process start -> first question", "s", None),
    "terminal_first_turn_s": ("terminal: first answer -> its grade (loads the model)", "s", None),
    "app_ready_s": ("cold start: app, process start -> HTTP 200", "s", 15.0),
    "app_first_session_s": ("app: process start -> first session started", "s", None),
    "app_first_start_s": ("app: page up (HTTP 200) -> first Start shows its question", "s", 2.0),
    "app_first_answer_s": ("app: process start -> first answer graded (the grading model loaded)", "s", None),
    "turn_p50_ms": ("per turn through the graph, p50", "ms", None),
    "turn_p95_ms": ("per turn through the graph, p95", "ms", 150.0),
    "grade_p50_ms": ("grade alone, p50", "ms", None),
    "grade_p95_ms": ("grade alone, p95", "ms", None),
    "retrieval_p50_ms": ("retrieval (k=5), p50", "ms", None),
    "retrieval_p95_ms": ("retrieval (k=5), p95", "ms", None),
    "index_build_s": ("corpus index build, fresh home", "s", None),
    "reindex_noop_s": ("re-index, nothing changed", "s", None),
    "rubric_vectors_s": ("rubric vectors for the whole bank, fresh home", "s", None),
    "transcription_rtf": ("transcription, x real time", "x", 0.3),
    "voice_turn_p50_s": ("voice turn: end of answer -> first sentence of the reply ready, p50", "s", None),
    "voice_turn_p95_s": ("voice turn: end of answer -> first sentence of the reply ready, p95", "s", 1.5),
    "tts_rtf": ("the interviewer's voice, x real time", "x", None),
    "load_errors": ("16 sessions at once: errors", "", 0.0),
    "load_p50_s": ("16 sessions at once: turn latency p50", "s", None),
    "load_p95_s": ("16 sessions at once: turn latency p95", "s", 1.0),
    "load_throughput": ("16 sessions at once: throughput", "turns/s", None),
    "app_peak_rss_gb": ("app peak memory (VmHWM) after the load", "GB", 1.5),
}


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile. `percentile([1, 2, 3, 4], 50)` is 2.5."""
    import numpy as np

    return float(np.percentile(values, q))


def median(values: list[float]) -> float:
    return percentile(values, 50)


def p50_p95(values: list[float]) -> tuple[float, float]:
    return median(values), percentile(values, 95)


def judge(name: str, value: float | None) -> str:
    limit = FIGURES[name][2]
    if value is None or limit is None:
        return "n/a" if value is None else "info"
    return "PASS" if value <= limit else "MISS"


def partial_answer(reference: str) -> str:
    """The first half of the reference answer's sentences (at least one)."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", reference.strip()) if s]
    return " ".join(sentences[: max(1, len(sentences) // 2)])


def answer_kind(n: int, prompt: dict[str, Any]) -> str:
    """Session n's kind of answer to a prompt: its questions cycle reference, partial, weak
    (by question number, so a weak answer's follow-ups do not shift the cycle)."""
    if prompt["type"] == "follow_up":
        return "follow-up" if (n + prompt["number"]) % 2 else "shrug"
    return KINDS[(n + prompt["number"]) % len(KINDS)]


def pick_answer(bank: Any, n: int, prompt: dict[str, Any]) -> str:
    """The text of session n's answer to a prompt (a question or follow-up event as JSON)."""
    kind = answer_kind(n, prompt)
    if kind in ("follow-up", "shrug"):
        return f"Right, {prompt['point'][0].lower()}{prompt['point'][1:]}." if kind == "follow-up" else SHRUG
    reference = bank.get(prompt["question_id"]).reference
    return {"reference": reference, "partial": partial_answer(reference), "weak": WEAK}[kind]


class Bench:
    def __init__(self, settings: Settings, plan: Plan, root: Path) -> None:
        self.plan, self.root = plan, root
        self.settings = settings.model_copy(
            update={"home": root / "base", "backend": "rubric", "grader": "rubric", "chroma_url": None,
                    "checkpoint_url": None, "auth": None}
        )  # fmt: skip
        self.figures: dict[str, float | None] = dict.fromkeys(FIGURES)
        self.details: dict[str, Any] = {}
        self.errors: dict[str, str] = {}

    def step(self, name: str, fn: Callable[[], None]) -> None:
        """Run one measurement; a failure is recorded against it, and the others still run."""
        print(f"bench: {name}...", file=sys.stderr, flush=True)
        try:
            fn()
        except Exception as exc:  # a broken measurement must not hide the others
            self.errors[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
            print(f"bench: {name} failed: {self.errors[name]}", file=sys.stderr, flush=True)

    def home(self, name: str) -> Path:
        """A data directory with a copy of the built index (each process keeps its own progress)."""
        home = self.root / name
        shutil.copytree(self.settings.home / "chroma", home / "chroma")
        if (self.settings.home / "cache").is_dir():  # the rubric vectors `interviewer index` keeps
            shutil.copytree(self.settings.home / "cache", home / "cache")
        return home

    # -- in process ---------------------------------------------------------

    def index(self) -> None:
        t0 = time.perf_counter()
        embedder_for(self.settings).encode(["load the model"], cache=False)
        self.details["embedding_model_load_s"] = time.perf_counter() - t0
        builds, noops = [], []
        for i in range(self.plan.index_builds):
            home = self.settings.home if i == 0 else self.root / f"index-{i}"
            settings = self.settings.model_copy(update={"home": home})
            store = Store(settings)
            builds.append(store.ensure_index(load_bank(settings)).seconds)
        store = Store(self.settings)
        for _ in range(self.plan.reindexes):
            report = store.ensure_index(load_bank(self.settings))
            assert report.added == report.removed == 0, "an unchanged corpus must re-index as a no-op"
            noops.append(report.seconds)
        self.details.update(index_build_s=builds, reindex_noop_s=noops, chunks=report.total)
        self.figures["index_build_s"], self.figures["reindex_noop_s"] = median(builds), median(noops)
        t0 = time.perf_counter()  # what `interviewer index` adds: every rubric's vectors, kept on disk
        RubricGrader(self.settings).prime_bank()
        self.figures["rubric_vectors_s"] = time.perf_counter() - t0

    def turns(self) -> None:
        settings = self.settings.model_copy(update={"home": self.home("turns")})
        manager = SessionManager(settings)
        bank = manager.services.bank
        warm = next(iter(bank))  # warm up as the app does: one grade loads the model
        manager.services.grader("rubric").grade(warm, warm.reference)
        by_kind: dict[str, list[float]] = {}
        for n in range(self.plan.sessions):
            sid, _ = manager.start(SessionOptions(questions=self.plan.questions, seed=n + 1))
            for _ in range(100):
                view = manager.state(sid)
                prompt = view.prompt()
                if view.finished or prompt is None:
                    break
                text, kind = pick_answer(bank, n, prompt.to_json()), answer_kind(n, prompt.to_json())
                time.sleep(READ_S)
                t0 = time.perf_counter()
                events = manager.send(sid, text)
                by_kind.setdefault(kind, []).append((time.perf_counter() - t0) * 1000)
                assert any(e.type == "grade" for e in events), f"no grade after {kind} answer"
        self.grades(manager)
        manager.close()
        manager.services.close()
        every = [ms for values in by_kind.values() for ms in values]
        self.figures["turn_p50_ms"], self.figures["turn_p95_ms"] = p50_p95(every)
        self.details["turn_ms"] = {k: {"n": len(v), "p50": median(v), "p95": percentile(v, 95), "max": max(v)}
                                   for k, v in by_kind.items()}  # fmt: skip

    def grades(self, manager: Any) -> None:
        """Grade alone: new answers to a sample of questions whose rubrics are embedded (as in a session)."""
        grader, bank = manager.services.grader("rubric"), manager.services.bank
        sample = random.Random(7).sample(list(bank), min(self.plan.grade_questions, len(bank)))
        grader.prime(sample)
        latencies = []
        for q in sample:
            for text in (q.reference, partial_answer(q.reference), WEAK):
                t0 = time.perf_counter()
                grader.grade(q, text)
                latencies.append((time.perf_counter() - t0) * 1000)
        self.figures["grade_p50_ms"], self.figures["grade_p95_ms"] = p50_p95(latencies)
        self.details["grades"] = len(latencies)

    def retrieval(self) -> None:
        store = Store(self.settings)
        lines = (REPO_ROOT / "evals" / "retrieval" / "paraphrases.jsonl").read_text().splitlines()
        queries = [json.loads(line)["query"] for line in lines if line.strip()][: self.plan.queries]
        store.search("warm up the query path", k=5)
        latencies = []
        for query in queries:
            t0 = time.perf_counter()
            store.search(query, k=5)
            latencies.append((time.perf_counter() - t0) * 1000)
        self.figures["retrieval_p50_ms"], self.figures["retrieval_p95_ms"] = p50_p95(latencies)
        self.details["queries"] = len(latencies)

    def transcription(self) -> None:
        bank = list(load_bank(self.settings))
        audio, seconds, question = make_speech(bank, self.plan.speech_s, self.root / "speech")
        transcriber = Transcriber(self.settings)
        t0 = time.perf_counter()
        transcriber.model  # noqa: B018  # load once, outside the timed part (as rtf is defined)
        self.details["whisper_load_s"] = time.perf_counter() - t0
        rtfs = [transcriber.transcribe(audio, prompt_terms=question_terms(question)).rtf
                for _ in range(self.plan.speech_reps)]  # fmt: skip
        self.figures["transcription_rtf"] = median(rtfs)
        self.details.update(
            speech_s=seconds, transcription_rtf=rtfs, whisper_model=self.settings.whisper_model
        )

    def voice_turns(self) -> None:
        """A voice interview's turn, in process as the app runs it: a spoken answer (12 s of
        espeak-ng speech) is transcribed and graded, and the interviewer's next words are
        synthesized. Measured from the end of the answer to the WAV of the line's first
        sentence being written: the app streams it while the rest is synthesized."""
        settings = self.settings.model_copy(update={"home": self.home("voice")})
        manager = SessionManager(settings)
        bank = manager.services.bank
        warm = next(iter(bank))
        manager.services.grader("rubric").grade(warm, warm.reference)
        audio, _, _ = make_speech(list(bank), 12.0, self.root / "voice-speech")
        voice = voice_for(settings.voice)
        out = self.root / "voice-lines"
        speak("Warm up the voice.", out / "warm.wav", voice)
        turns, rtfs = [], []
        sid, _ = manager.start(SessionOptions(questions=self.plan.voice_turns + 1, seed=3, mode="drill"))
        manager.send(sid, AudioAnswer(str(audio)))  # the first loads Whisper: not timed
        for n in range(self.plan.voice_turns):
            t0 = time.perf_counter()
            manager.send(sid, AudioAnswer(str(audio)))
            first, *rest = spoken_parts(spoken_line(manager.state(sid).events))
            spoken = speak(first, out / f"line-{n}.wav", voice)  # the app streams it, then the rest
            turns.append(time.perf_counter() - t0)
            rtfs.append(spoken.rtf)
            for m, part in enumerate(rest):
                rtfs.append(speak(part, out / f"line-{n}-{m}.wav", voice).rtf)
        manager.close()
        manager.services.close()
        self.figures["voice_turn_p50_s"], self.figures["voice_turn_p95_s"] = p50_p95(turns)
        self.figures["tts_rtf"] = median(rtfs)
        self.details.update(voice=voice.name, voice_turn_s=turns, tts_rtf=rtfs)

    # -- other processes ------------------------------------------------------

    def cold_starts(self) -> None:
        bank = load_bank(self.settings)
        runs = [terminal_cold_start(self.home(f"terminal-{i}"), lambda qid: bank.get(qid).reference)
                for i in range(self.plan.cold_starts)]  # fmt: skip
        self.details["terminal"] = runs
        self.figures["terminal_first_question_s"] = median([r["first_question_s"] for r in runs])
        self.figures["terminal_first_turn_s"] = median([r["first_turn_s"] for r in runs])

    def app(self) -> None:
        """App cold starts (the last one stays up), then the load, then its peak memory."""
        ready, first = [], []
        for i in range(self.plan.cold_starts):
            app = App(self.home(f"app-{i}"))
            ready.append(app.ready_s)
            try:
                first.append(first_session_s(app))
            finally:
                if i < self.plan.cold_starts - 1:
                    app.stop()
        self.figures["app_ready_s"], self.figures["app_first_session_s"] = median(ready), median(first)
        after_page = [f - r for f, r in zip(first, ready, strict=True)]  # /start is sent as the page is up
        self.figures["app_first_start_s"] = median(after_page)
        self.details.update(app_ready_s=ready, app_first_session_s=first, app_first_start_s=after_page)
        try:
            bank = load_bank(self.settings)

            def pick(n: int, k: int, prompt: dict[str, Any]) -> str:
                return pick_answer(bank, n, prompt)

            # the sessions arrive once the app has graded once: what they measure is its capacity,
            # not the model's loading, which the first answer's figure shows
            self.figures["app_first_answer_s"] = first_answer_s(app, pick)
            load = run_load(app.url, self.plan.load_sessions, self.plan.load_turns, pick)
            rss = peak_rss_bytes(app.proc.pid)
        finally:
            app.stop()
        latencies = load.pop("latencies_s")
        self.figures["load_errors"] = float(len(load["errors"]))  # a failed start or answer call
        if latencies:
            self.figures["load_p50_s"], self.figures["load_p95_s"] = p50_p95(latencies)
            self.figures["load_throughput"] = len(latencies) / load["wall_s"]
        starts = load.pop("start_latencies_s")
        self.details["load"] = {**load, "start_p95_s": percentile(starts, 95) if starts else None,
                                "turn_max_s": max(latencies, default=None)}  # fmt: skip
        self.figures["app_peak_rss_gb"] = rss / 1e9 if rss is not None else None

    def run(self) -> None:
        self.step("index build and no-op re-index", self.index)
        self.step("retrieval", self.retrieval)
        self.step("per-turn latency and grade latency", self.turns)
        self.step("transcription", self.transcription)
        self.step("voice turn", self.voice_turns)
        self.step("terminal cold start", self.cold_starts)
        self.step("app cold start, 16 sessions at once, peak memory", self.app)


# ---------------------------------------------------------------- report


def to_json(bench: Bench, quick: bool, started: datetime, wall_s: float, load: tuple[Any, Any]) -> dict:
    figures = {}
    for name, (label, unit, target) in FIGURES.items():
        value = bench.figures[name]
        figures[name] = {"label": label, "value": None if value is None else round(value, 4), "unit": unit,
                         "target": None if target is None else f"<= {target:g}",
                         "result": judge(name, value)}  # fmt: skip
    return {
        "quick": quick,
        "started_at": started.isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 1),
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_before": load[0],
            "load_avg_after": load[1],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "figures": figures,
        "errors": bench.errors,
        "details": json.loads(
            json.dumps(bench.details, default=str), parse_float=lambda s: round(float(s), 4)
        ),
    }


NOTES = (
    "Embedded backend (rubric), SQLite checkpoints, a fresh data directory. Per turn: "
    "`SessionManager.send` from answer to grade and next prompt, after a {read_s:g} s pause "
    "standing in for reading the prompt (not counted). The load: {sessions} gradio_client users "
    "start together and answer the moment each reply arrives (no thinking time), so their turn "
    "latency is about {sessions} / throughput. Load average: 1, 5 and 15 minutes."
)


def show(value: float | None, unit: str) -> str:
    """`show(172.34, "ms")` is '172 ms'; `show(0.0763, "x")` is '0.0763 x'."""
    if value is None:
        return "—"
    if not unit:
        return f"{value:.0f}"
    text = f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.3g}"
    return f"{text} {unit}"


def to_markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    load = (
        " / ".join(f"{x:g}" for x in m["load_avg_before"]),
        " / ".join(f"{x:g}" for x in m["load_avg_after"]),
    )
    lines = [
        f"# interviewer bench{' --quick' if data['quick'] else ''}",
        "",
        f"{data['started_at']} · {m['cpus']} CPUs · load average {load[0]} before, {load[1]} after · "
        f"Python {m['python']} · {data['wall_s']} s in all",
        "",
        NOTES.format(read_s=READ_S, sessions=data["details"].get("load", {}).get("sessions", 16)),
        "",
        "| figure | value | target | result |",
        "| --- | ---: | ---: | --- |",
    ]
    for f in data["figures"].values():
        value = show(f["value"], f["unit"])
        target = f"{f['target']} {f['unit']}".strip() if f["target"] else "—"
        lines.append(f"| {f['label']} | {value} | {target} | {f['result']} |")
    if data["errors"]:
        lines += ["", "Measurements that failed:", ""]
        lines += [f"- {name}: {why}" for name, why in data["errors"].items()]
    return "\n".join(lines) + "\n"


def run_bench(settings: Settings, args: argparse.Namespace) -> int:
    quick = bool(getattr(args, "quick", False))
    started, t0 = datetime.now(UTC), time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    root = Path(tempfile.mkdtemp(prefix="interviewer-bench-"))
    bench = Bench(settings, QUICK if quick else FULL, root)
    try:
        bench.run()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load_after = [round(x, 2) for x in os.getloadavg()]
    data = to_json(bench, quick, started, time.perf_counter() - t0, (load_before, load_after))
    stem = "bench-quick" if quick else "bench"
    out = Path(args.out) if getattr(args, "out", None) else RESULTS_DIR or default_results_dir(settings.home)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / f"{stem}.md").write_text(to_markdown(data))
    print(json.dumps(data, indent=1) if getattr(args, "json", False) else to_markdown(data))
    print(f"wrote {out / stem}.json and .md", file=sys.stderr)
    return 1 if bench.errors else 0
