"""`interviewer practice`: a mock interview in the terminal.

Reads answers from stdin — an answer ends with an empty line, a command
(`/skip`, `/hint`, `/answer`, `/repeat`, `/end`) is one line — so it works
typed or piped (`interviewer practice < answers.txt`). End of input ends the
session cleanly with the summary. `--json-log FILE` writes every event as
one JSON line, flushed as it happens.

`--speak` says the interviewer's lines (questions, follow-ups, hints) in its voice
(`interviewer.speech.voice`): played through the default audio output where there is
one, and otherwise written as numbered WAV files next to the JSON log (or under the data
directory), each path printed. `--listen` records each answer from the default microphone
(ALSA's `arecord`; Enter starts and stops it) and sends the recording to be transcribed;
where there is no microphone it says so once and reads typed answers.

All interview logic is in session.py; this module only reads and prints.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import IO, Any

from interviewer.errors import InterviewerError
from interviewer.interview.session import HELP, AudioAnswer, SessionManager, SessionOptions
from interviewer.interview.state import Event
from interviewer.settings import Settings
from interviewer.speech.voice import Voice, speak, voice_for

SPOKEN = ("question", "follow_up", "hint")  # the interviewer's lines
SOUND_DEVICES = Path("/dev/snd")

MARKS = {"covered": "+", "partial": "~", "missed": "-"}
WIDTH = 100


def read_message(stream: IO[str]) -> str | None:
    """The next answer or command; None at end of input.

    Blank lines before an answer are skipped; a command is a single line; an
    answer runs to the next empty line (or the end of input).
    """
    lines: list[str] = []
    for raw in iter(stream.readline, ""):
        line = raw.rstrip("\n")
        if not lines:
            if not line.strip():
                continue
            if line.strip().startswith("/") and " " not in line.strip():
                return line.strip()
        elif not line.strip():
            break
        lines.append(line)
    return "\n".join(lines) if lines else None


def _wrap(text: str, indent: str = "") -> str:
    return "\n".join(
        textwrap.fill(para, WIDTH, initial_indent=indent, subsequent_indent=indent) if para.strip() else ""
        for para in text.split("\n")
    )


def render(event: Event) -> str:
    """How an event reads in the terminal (token events are written raw, elsewhere)."""
    e: dict[str, Any] = event.to_json()
    kind = event.type
    if kind == "question":
        again = " (repeated)" if e["repeat"] else ""
        where = f"[{e['question_id']} · {e['topic']} · {e['difficulty']}]"
        return f"\nQuestion {e['number']}/{e['total']}{again} {where}\n{_wrap(e['text'])}\n"
    if kind == "follow_up":
        cited = "; ".join(dict.fromkeys(s["citation"] for s in e["sources"]))
        grounded = f"\n  (grounded in {cited})" if cited else ""
        return f"\n{_wrap(e['text'])}{grounded}\n"
    if kind == "answer":
        if not e["audio"]:
            return ""
        d = e["delivery"] or {}
        pace = f" ({d.get('words_per_minute', 0):g} wpm, {d.get('fillers_per_minute', 0):g} fillers/min)"
        return f"You said: {_wrap(e['text'])}{pace if d else ''}"
    if kind == "grade":
        if e.get("debrief"):
            lines = [f"Debrief: the question scores {e['score']:g}/5 with the follow-ups counted"]
        else:
            lines = [f"Score {e['score']:g}/5" + (f" — question now {e['running_score']:g}/5"
                                                    if e["follow_up_point"] else "")]  # fmt: skip
        for p in e["points"]:
            optional = "" if p["core"] else " (optional)"
            quote = f' — "{p["evidence"][:160]}"' if p["evidence"] else ""
            lines.append(f"  {MARKS.get(p['status'], '?')} {p['text']}{optional}{quote}")
        lines += [f"  ! wrong: {m}" for m in e["misconceptions"]]
        if e["flags"]:
            lines.append(f"  (flags: {', '.join(e['flags'])})")
        lines.append(_wrap(e["text"], "  "))
        return "\n".join(lines)
    if kind == "reveal":
        sources = [f"  [{i}] {s['citation']}: {s['text'][:300].replace(chr(10), ' ')}"
                   for i, s in enumerate(e["sources"], 1)]  # fmt: skip
        return "\n".join(["Model answer:", _wrap(e["text"], "  "), "Sources:", *sources])
    if kind == "notice":
        return f"note: {e['text']}"
    if kind == "summary":
        return f"\n{e['text']}"
    return _wrap(e["text"])  # hint, skip


class Printer:
    """Writes events to the terminal and, optionally, the JSON log."""

    def __init__(self, out: IO[str], log: IO[str] | None) -> None:
        self.out = out
        self.log = log
        self.streamed = ""  # text of a prompt streamed token by token

    def show(self, event: Event) -> None:
        if event.type == "token":
            if not self.streamed:
                self.out.write("\n")
            self.streamed += event.text
            self.out.write(event.text)
            self.out.flush()
            return
        if self.log is not None:
            self.log.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
            self.log.flush()
        text = render(event)
        if (
            self.streamed
            and event.type in ("question", "follow_up")
            and event.text.strip() == self.streamed.strip()
        ):
            text = text.replace(_wrap(event.text), "").rstrip() + "\n"  # already on screen
        if self.streamed and event.type in ("question", "follow_up", "notice"):
            self.out.write("\n")
            self.streamed = ""
        if text:
            self.out.write(text + "\n")
            self.out.flush()


def has_audio_device() -> bool:
    """Whether ALSA sees a sound card (a machine without one gets WAV files instead)."""
    return SOUND_DEVICES.is_dir() and any(SOUND_DEVICES.glob("pcm*"))


class Narrator:
    """Says the interviewer's lines; a voice that fails is switched off with one notice."""

    def __init__(self, voice: Voice, folder: Path, out: IO[str], play: bool | None = None) -> None:
        self.voice, self.folder, self.out = voice, folder, out
        if play is None:
            play = has_audio_device() and shutil.which("aplay") is not None
        self.play = play
        self.count = 0
        self.on = True

    def say(self, event: Event) -> Path | None:
        if not self.on or event.type not in SPOKEN or not event.text.strip():
            return None
        self.count += 1
        path = self.folder / f"{self.count:03d}-{event.type}.wav"
        try:
            speak(event.text, path, self.voice)
        except InterviewerError as exc:
            self.on = False
            self.out.write(f"note: the voice is off for this session ({exc})\n")
            return None
        if self.play:
            subprocess.run(["aplay", "-q", str(path)], check=False, timeout=120)
        else:
            self.out.write(f"  (spoken: {path})\n")
        return path


def record_answer(inp: IO[str], out: IO[str], folder: Path, n: int) -> AudioAnswer | None:
    """Enter starts recording from the default microphone, Enter stops it."""
    out.write("Press Enter to start speaking, Enter again when you are done.\n")
    out.flush()
    if not inp.readline():
        return None
    path = folder / f"answer-{n:03d}.wav"
    folder.mkdir(parents=True, exist_ok=True)
    rec = subprocess.Popen(["arecord", "-q", "-f", "S16_LE", "-r", "16000", "-c", "1", str(path)])
    inp.readline()
    rec.terminate()
    rec.wait(timeout=10)
    return AudioAnswer(str(path))


def _options(settings: Settings, args: argparse.Namespace) -> SessionOptions:
    return SessionOptions(
        topics=tuple(args.topic or ()),
        difficulty=args.difficulty,
        source=args.source,
        questions=args.questions,
        mode=args.mode,
        backend=settings.backend,
    )


def run_practice(
    settings: Settings,
    args: argparse.Namespace,
    *,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
    manager: SessionManager | None = None,
) -> int:
    inp, out = stdin or sys.stdin, stdout or sys.stdout
    own = manager is None
    manager = manager or SessionManager(settings)
    log = open(args.json_log, "a", encoding="utf-8") if getattr(args, "json_log", None) else None  # noqa: SIM115
    printer = Printer(out, log)
    session_id = ""
    narrator: Narrator | None = None
    listen = bool(getattr(args, "listen", False))
    if listen and not (has_audio_device() and shutil.which("arecord")):
        out.write("note: no microphone found (no ALSA capture device): type your answers instead.\n")
        listen = False
    try:
        options = None if args.resume else _options(settings, args)
        if options is not None:
            manager.check(options)  # a wrong topic fails now, not after the first index
        if manager.services.store.count() == 0:
            print("building the vector index (first run, about 30 s)...", file=sys.stderr)
            manager.ensure_index()
        if options is None:
            session_id, events = manager.resume(args.resume)
            out.write(f"resuming session {session_id}\n")
        else:
            session_id, events = manager.start(options)
            out.write(f"session {session_id} — resume with `interviewer practice --resume {session_id}`\n")
            out.write(f"Answer, then an empty line to send it. {HELP} End of input ends the session.\n")
        out.flush()
        if getattr(args, "speak", False):
            folder = (
                Path(args.json_log).resolve().parent / f"{session_id}-speech"
                if getattr(args, "json_log", None)
                else settings.home / "speech" / session_id
            )
            try:
                narrator = Narrator(voice_for(settings.voice), folder, out)
            except InterviewerError as exc:
                out.write(f"note: the voice is off ({exc})\n")
        for event in events:
            printer.show(event)
            if narrator:
                narrator.say(event)
        finished = any(e.type == "summary" for e in events)
        answers = 0
        while not finished:
            message: str | AudioAnswer | None
            if listen:
                answers += 1
                message = record_answer(inp, out, settings.home / "speech" / session_id, answers)
            else:
                if inp.isatty():
                    out.write("> ")
                    out.flush()
                message = read_message(inp)
            for event in manager.stream(session_id, "/end" if message is None else message):
                printer.show(event)
                if narrator:
                    narrator.say(event)
                finished = finished or event.type == "summary"
        return 0
    except KeyboardInterrupt:
        if session_id:
            print(f"\nsession {session_id} saved — resume with `interviewer practice --resume {session_id}`",
                  file=sys.stderr)  # fmt: skip
        raise
    finally:
        if log is not None:
            log.close()
        if own:
            manager.close()
