"""`interviewer practice` in the terminal: piped answers, commands, the JSON log, kill and resume."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from answers import weak_answer

from interviewer.corpus.bank import load_bank
from interviewer.interview.progress import ProgressStore
from interviewer.interview.session import SessionManager
from interviewer.interview.state import GradeEvent
from interviewer.interview.terminal import read_message, render, run_practice
from interviewer.settings import load_settings

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("typed", "messages"),
    [
        ("one\ntwo\n\nthree\n", ["one\ntwo", "three", None]),
        ("\n\n/skip\n/hint\n\n\nanswer\n", ["/skip", "/hint", "answer", None]),
        ("/answer now please\n\n", ["/answer now please", None]),  # a sentence, not a command
        ("", [None]),
    ],
)
def test_read_message(typed: str, messages: list[str | None]) -> None:
    stream = io.StringIO(typed)
    assert [read_message(stream) for _ in messages] == messages


def test_grade_shows_marks_and_evidence() -> None:
    grade = GradeEvent(
        "s", "004-01", "Missing: b.", score=2.5,
        points=[{"text": "a", "core": True, "status": "covered", "evidence": "I said a"},
                {"text": "b", "core": True, "status": "missed", "evidence": ""},
                {"text": "c", "core": False, "status": "partial", "evidence": "sort of c"}],
        misconceptions=["d is true"],
    )  # fmt: skip
    shown = render(grade)
    assert (
        'Score 2.5/5\n  + a — "I said a"\n  - b\n  ~ c (optional) — "sort of c"\n  ! wrong: d is true'
        in shown
    )


def practice_args(**overrides: Any) -> argparse.Namespace:
    values: dict[str, Any] = dict(topic=None, difficulty=None, source="004", questions=2, mode="interview",
                                  backend=None, json_log=None, resume=None, speak=False, listen=False)  # fmt: skip
    values.update(overrides)
    return argparse.Namespace(**values)


def test_piped_commands_and_eof_end_with_a_summary(settings, manager: SessionManager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "log.jsonl"
    typed = (
        "/hint\n\n/repeat\n/answer\n\nIt depends on the data,\nand on the model.\n"  # EOF after the answer
    )
    out = io.StringIO()
    code = run_practice(settings, practice_args(json_log=str(log)), stdin=io.StringIO(typed), stdout=out,
                        manager=manager)  # fmt: skip
    assert code == 0
    events = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[:5] == ["question", "hint", "question", "reveal", "question"]
    assert events[2]["repeat"] and events[2]["text"] == events[0]["text"]
    # the grade is held while the follow-up asks; ending the session gives the debrief
    assert kinds[5:] == ["answer", "grade", "follow_up", "grade", "summary"]
    assert events[6]["held"] and events[8]["debrief"] and events[8]["missed"]
    assert events[5]["text"] == "It depends on the data,\nand on the model."
    assert len({e["session_id"] for e in events}) == 1
    assert all({"type", "session_id", "question_id", "text"} <= set(e) for e in events)
    assert "score" in events[6] and "missed" in events[6] and events[-1]["ended_early"]
    shown = out.getvalue()
    sid = events[0]["session_id"]
    assert shown.startswith(f"session {sid} — resume with `interviewer practice --resume {sid}`")
    assert "Model answer:" in shown and "Sources:" in shown and "Session summary" in shown


def test_speak_writes_each_interviewer_line_as_a_wav_next_to_the_log(
    settings, manager: SessionManager, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """On a machine with no audio output the voice goes to numbered WAV files; a machine
    with no microphone says so and reads the typed answer."""
    log = tmp_path / "log.jsonl"
    out = io.StringIO()
    voiced = settings.model_copy(update={"voice": "espeak-ng"})
    args = practice_args(json_log=str(log), questions=1, speak=True, listen=True)
    assert run_practice(voiced, args, stdin=io.StringIO("/skip\n"), stdout=out, manager=manager) == 0
    events = [json.loads(line) for line in log.read_text().splitlines()]
    folder = tmp_path / f"{events[0]['session_id']}-speech"
    shown = out.getvalue()
    assert "no microphone found" in shown
    assert (folder / "001-question.wav").stat().st_size > 10_000
    assert f"(spoken: {folder / '001-question.wav'})" in shown


def test_a_voice_that_is_not_installed_leaves_the_session_in_text(
    settings, manager: SessionManager, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    voiced = settings.model_copy(update={"voice": "/nowhere/voice.onnx"})
    args = practice_args(questions=1, speak=True)
    assert run_practice(voiced, args, stdin=io.StringIO("/skip\n"), stdout=out, manager=manager) == 0
    shown = out.getvalue()
    assert "note: the voice is off for this session (Piper voice not found" in shown
    assert "Session summary" in shown


# ---------------------------------------------------------------- real processes


class Practice:
    """`python -m interviewer.cli practice ...` with pipes, driven by its JSON log."""

    def __init__(self, home: Path, log: Path, *args: str) -> None:
        env = {**os.environ, "INTERVIEWER_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        self.log = log
        self.cursor = 0
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "interviewer.cli", "practice", "--json-log", str(log), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env, cwd=home,
        )  # fmt: skip
        self.output: list[str] = []
        for pipe in (self.proc.stdout, self.proc.stderr):
            threading.Thread(
                target=lambda p=pipe: self.output.extend(iter(p.readline, "")), daemon=True
            ).start()

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text().split("\n")[:-1]  # only complete, flushed lines
        return [json.loads(line) for line in lines]

    def next(self, *kinds: str, timeout: float = 120) -> dict[str, Any]:
        """The next logged event of one of `kinds`, waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.events()
            for i in range(self.cursor, len(events)):
                if events[i]["type"] in kinds:
                    self.cursor = i + 1
                    return events[i]
            if self.proc.poll() is not None and len(self.events()) == len(events):
                raise AssertionError(f"practice exited ({self.proc.returncode}):\n{''.join(self.output)}")
            time.sleep(0.05)
        raise AssertionError(f"no {kinds} event within {timeout} s:\n{''.join(self.output)}")

    def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n\n")
        self.proc.stdin.flush()

    def finish(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


@pytest.fixture
def home(tmp_path: Path, built_index: Path) -> Path:
    """A data directory with a copy of the built index (each process writes its own progress)."""
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copytree(built_index / "chroma", home / "chroma")
    shutil.copytree(
        built_index / "cache", home / "cache"
    )  # rubric vectors, as `interviewer index` leaves them
    return home


def answer_all(practice: Practice, bank: Any, weak_first: bool = False) -> list[dict[str, Any]]:
    """Answer until the summary: reference answers, a weak first answer, follow-ups with a shrug."""
    asked = 0
    while True:
        event = practice.next("question", "follow_up", "summary")
        if event["type"] == "summary":
            return practice.events()
        if event["type"] == "follow_up":
            practice.say("I am not sure about that part.")
            continue
        asked += 1
        q = bank.get(event["question_id"])
        practice.say(weak_answer(q) if weak_first and asked == 1 else q.reference)


@pytest.mark.slow
def test_piped_session_follows_up_a_weak_answer_only(home: Path, settings) -> None:  # type: ignore[no-untyped-def]
    bank = load_bank(settings)
    practice = Practice(home, home / "log.jsonl", "--source", "004", "--questions", "3")
    events = answer_all(practice, bank, weak_first=True)
    assert practice.finish() == 0
    grades = [
        (i, e) for i, e in enumerate(events)
        if e["type"] == "grade" and not e["follow_up_point"] and not e["debrief"]
    ]  # fmt: skip
    assert len(grades) == 3
    (i, weak), *complete = grades
    follow = events[i + 1]
    covered = {p["text"] for p in weak["points"] if p["status"] == "covered"}
    assert (
        weak["held"]
        and weak["missed"] == []
        and follow["type"] == "follow_up"
        and follow["point"] not in covered
    )
    assert sum(e["type"] == "grade" and e["debrief"] for e in events) == 1
    follow_ups = [e for e in events if e["type"] == "follow_up"]
    assert 1 <= len(follow_ups) <= 2 and {e["question_id"] for e in follow_ups} == {weak["question_id"]}
    for j, grade in complete:
        assert grade["missed"] == [] and events[j + 1]["type"] in ("question", "summary")
    shown = "".join(practice.output)
    assert f"session {events[0]['session_id']} — resume with" in shown
    assert "\n  + " in shown and "\n  - " in shown and '— "' in shown  # marks and evidence quotes


@pytest.mark.slow
def test_killed_session_resumes_without_losing_or_repeating_answers(home: Path) -> None:
    settings = load_settings(home=home)
    bank = load_bank(settings)
    first = Practice(home, home / "log1.jsonl", "--source", "004", "--questions", "3")
    question = first.next("question")
    weak = weak_answer(bank.get(question["question_id"]))
    first.say(weak)
    first.next("grade")
    first.proc.send_signal(signal.SIGKILL)  # mid-session, right after the first graded answer
    first.proc.wait(timeout=30)
    sid = question["session_id"]

    second = Practice(home, home / "log2.jsonl", "--resume", "last")
    events = answer_all(second, bank)
    assert second.finish() == 0
    assert {e["session_id"] for e in events} == {sid}
    assert f"resuming session {sid}" in "".join(second.output)

    attempts = ProgressStore(settings.progress_path).attempts(sid)
    manager = SessionManager(settings)
    stored = manager.state(sid).events
    manager.close()
    graded = [e for e in stored if e.type == "grade" and not e.debrief]  # type: ignore[attr-defined]
    asked = [e.question_id for e in stored if e.type == "question" and not e.repeat]  # type: ignore[attr-defined]
    # No answer lost: the answer given before the kill is stored, once, with its grade.
    assert [a["answer"] for a in attempts].count(weak) == 1
    # No graded question repeated: each question asked and answered once.
    assert len(asked) == len(set(asked)) == 3
    assert sorted(a["question_id"] for a in attempts if a["kind"] == "answer") == sorted(asked)
    # The progress store and the checkpoint agree, attempt for attempt.
    with_grade = [a for a in attempts if a["grade"] is not None]
    assert [(a["question_id"], a["score"]) for a in with_grade] == [(g.question_id, g.score) for g in graded]  # type: ignore[attr-defined]
    assert len({a["id"] for a in attempts}) == len(attempts)
    assert stored[-1].type == "summary" and stored[-1].answered == 3  # type: ignore[attr-defined]
