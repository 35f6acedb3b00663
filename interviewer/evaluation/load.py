"""The benchmarks that run other processes: cold starts, the app under load, its peak memory, speech.

Each helper starts `python -m interviewer.cli ...` with its own data directory,
measures from the outside (the lines it prints, HTTP status, gradio_client
calls, `/proc/<pid>/status`) and stops what it started. bench.py calls these
and judges the figures; this module sets no targets and writes no results.

    app = App(home)                          # app.ready_s: process start -> HTTP 200
    stats = run_load(app.url, 16, 5, pick)   # {"turns", "errors", "latencies_s", "wall_s", ...}
    peak_rss_bytes(app.proc.pid)             # VmHWM: the process's peak resident memory
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORDS_PER_S = 2.5  # espeak-ng at 150 words per minute
# (session index, turn index, the prompt event awaiting an answer) -> the answer's text
AnswerPicker = Callable[[int, int, dict[str, Any]], str]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(home: Path) -> dict[str, str]:
    """The environment of a measured process: its own data dir, unbuffered output, no telemetry."""
    return {
        **os.environ,
        "INTERVIEWER_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
    }


# How long a child gets to exit after SIGTERM before it is killed: `interviewer ui` first waits
# up to 60 s for its model warm-up to finish (`Interviews.settle`), and on two busy cores
# loading the models can take longer than the 15 s this once was (a clean exit read as -9).
STOP_WAIT_S = 90


class Child:
    """`python -m interviewer.cli ARGS` with every output line kept as (seconds since start, line)."""

    def __init__(self, args: list[str], home: Path) -> None:
        self.lines: list[tuple[float, str]] = []
        self._changed = threading.Condition()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "interviewer.cli", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(home),
            cwd=home,
        )
        for pipe in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._read, args=(pipe,), daemon=True).start()

    def _read(self, pipe: Any) -> None:
        for line in iter(pipe.readline, ""):
            with self._changed:
                self.lines.append((time.perf_counter() - self.started, line.rstrip("\n")))
                self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float, after: int = 0) -> tuple[float, int]:
        """(seconds since start, line index) of the first line from `after` on matching `pattern`."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for i in range(after, len(self.lines)):
                    if regex.search(self.lines[i][1]):
                        return self.lines[i][0], i
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.describe()} exited ({self.proc.returncode}):\n{self.output()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no line matching {pattern!r} within {timeout:g} s:\n{self.output()}")
                self._changed.wait(0.05)

    def describe(self) -> str:
        return " ".join(str(a) for a in self.proc.args[2:])  # type: ignore[index]

    def output(self, last: int = 30) -> str:
        return "\n".join(line for _, line in self.lines[-last:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def terminal_cold_start(home: Path, answer: Callable[[str], str], timeout: float = 180) -> dict[str, float]:
    """Process start -> the first question on stdout; then one answer -> its grade on stdout.

    `answer(question_id)` gives the text to send. The first grade loads the
    grading model, so `first_turn_s` is the slowest turn a terminal user sees.
    """
    child = Child(["practice", "--questions", "1", "--mode", "drill"], home)
    try:
        first_question_s, line = child.wait_for(r"^Question 1/", timeout)
        question_id = re.search(r"\[(\S+) ·", child.lines[line][1])
        assert child.proc.stdin is not None
        sent = time.perf_counter() - child.started
        child.proc.stdin.write(answer(question_id.group(1) if question_id else "") + "\n\n")
        child.proc.stdin.flush()
        graded_s, _ = child.wait_for(r"^Score \d", timeout, after=line)
        child.proc.stdin.close()
        child.proc.wait(timeout=60)
        return {"first_question_s": first_question_s, "first_turn_s": graded_s - sent}
    finally:
        child.stop()


class App:
    """An `interviewer ui` process on a free local port."""

    def __init__(self, home: Path, port: int | None = None, timeout: float = 120) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.child = Child(["ui", "--port", str(self.port)], home)
        self.proc = self.child.proc
        self.ready_s = self._wait_http_200(timeout)

    def _wait_http_200(self, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app exited ({self.proc.returncode}):\n{self.child.output()}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as reply:
                    if reply.status == 200:
                        return time.perf_counter() - self.child.started
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        raise TimeoutError(f"the app did not answer HTTP 200 within {timeout:g} s:\n{self.child.output()}")

    def stop(self) -> None:
        self.child.stop()


def peak_rss_bytes(pid: int) -> int | None:
    """The process's peak resident set (VmHWM), in bytes; None where /proc is not available."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) * 1024 if found else None


def _client(url: str) -> Any:
    from gradio_client import Client

    return Client(url, verbose=False)


def first_session_s(app: App, timeout: float = 180) -> float:
    """Process start -> the app's first /start answered (it waits for the grading model to load)."""
    result = _client(app.url).predict(questions=1, mode="drill", api_name="/start")
    if not result.get("session_id"):
        raise RuntimeError(f"/start returned no session: {result}")
    return time.perf_counter() - app.child.started


def _prompt(reply: dict[str, Any]) -> dict[str, Any] | None:
    """The question or follow-up a reply ends on (None when it asks nothing)."""
    return next((e for e in reversed(reply["events"]) if e["type"] in ("question", "follow_up")), None)


def first_answer_s(app: App, pick: AnswerPicker) -> float:
    """Process start -> the first answer of a new session graded: the grading model loaded.
    The first Start does not wait for it (`Interviews.wait_ready(to_start=True)`); the first
    answer does."""
    client = _client(app.url)
    reply = client.predict(questions=1, mode="interview", api_name="/start")
    prompt = _prompt(reply)
    if prompt is None:
        raise RuntimeError(f"the first Start asked nothing: {[e['type'] for e in reply['events']]}")
    reply = client.predict(session_id=reply["session_id"], text=pick(0, 0, prompt), api_name="/answer")
    if not any(e["type"] == "grade" for e in reply["events"]):
        raise RuntimeError(f"the first answer was not graded: {[e['type'] for e in reply['events']]}")
    return time.perf_counter() - app.child.started


def run_load(url: str, sessions: int, turns: int, pick: AnswerPicker) -> dict[str, Any]:
    """`sessions` gradio_client users at once, each starting a session and answering `turns` times.

    Every user waits at a barrier so all start together, and answers as soon as
    the previous reply arrives (no thinking time: the worst case for the
    server). A turn is an error when the call raises or its reply has no grade.
    """
    clients = [_client(url) for _ in range(sessions)]
    barrier = threading.Barrier(sessions + 1)
    latencies: list[float] = []
    starts: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def user(n: int) -> None:
        client = clients[n]
        barrier.wait()
        try:
            t0 = time.perf_counter()
            reply = client.predict(questions=turns, mode="interview", api_name="/start")
            with lock:
                starts.append(time.perf_counter() - t0)
        except Exception as exc:  # gradio_client raises AppError and transport errors alike
            with lock:
                errors.append(f"start: {type(exc).__name__}: {str(exc)[:120]}")
            return
        sid = reply["session_id"]
        for k in range(turns):
            prompt = _prompt(reply)
            if reply.get("finished") or prompt is None:
                return
            try:
                t0 = time.perf_counter()
                reply = client.predict(session_id=sid, text=pick(n, k, prompt), api_name="/answer")
                took = time.perf_counter() - t0
            except Exception as exc:
                with lock:
                    errors.append(f"answer: {type(exc).__name__}: {str(exc)[:120]}")
                return
            with lock:
                latencies.append(took)
                if not any(e["type"] == "grade" for e in reply["events"]):
                    errors.append(f"answer: no grade in {[e['type'] for e in reply['events']]}")

    threads = [threading.Thread(target=user, args=(n,), daemon=True) for n in range(sessions)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join(timeout=600)
    wall = time.perf_counter() - t0
    for client in clients:
        close = getattr(client, "close", None)
        if callable(close):
            close()
    return {
        "sessions": sessions,
        "turns_per_session": turns,
        "turns": len(latencies),
        "errors": errors,
        "latencies_s": latencies,
        "start_latencies_s": starts,
        "wall_s": wall,
    }


def make_speech(bank: list[Any], seconds: float, folder: Path) -> tuple[Path, float, Any]:
    """About `seconds` of espeak-ng speech reading reference answers, as 16 kHz mono WAV."""
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        raise RuntimeError("espeak-ng and sox are needed to make test speech: apt-get install espeak-ng sox")
    folder.mkdir(parents=True, exist_ok=True)
    words: list[str] = []
    for q in bank:  # the answers run on; Whisper is prompted with the first question's terms
        words += q.reference.split()
        if len(words) >= seconds * WORDS_PER_S:
            break
    text = " ".join(words[: int(seconds * WORDS_PER_S)])
    raw, out = folder / "raw.wav", folder / "speech.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    with wave.open(str(out)) as w:
        return out, w.getnframes() / w.getframerate(), bank[0]
