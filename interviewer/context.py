"""The graph's run-time context: heavy objects built once and shared by every session.

`Services` holds the bank, the vector store, the progress store, graders, LLM
backends and speech-to-text. Each is built on first use, under a lock, and
then shared (the app runs sessions in several threads). Tests pass
ready-made or fake ones to the constructor.

Speech sits behind the small `Speech` protocol so the graph runs without
Whisper; `WhisperSpeech` is the real one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from .errors import BadAudio
from .settings import Settings

if TYPE_CHECKING:
    from .bank import Bank
    from .grading import Grader
    from .llm import LLMBackend
    from .progress import ProgressStore
    from .store import Store


@dataclass(frozen=True)
class Transcription:
    text: str
    delivery: dict[str, Any] = field(default_factory=dict)  # wpm, fillers, long pauses


class Speech(Protocol):
    def transcribe(self, path: str, prompt_terms: list[str]) -> Transcription:
        """Text of a recorded answer. Raises BadAudio (re-record) or BackendUnavailable."""
        ...


class WhisperSpeech:
    """faster-whisper via `interviewer.speech`, imported on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def transcribe(self, path: str, prompt_terms: list[str]) -> Transcription:
        from .speech import Transcriber, load_audio

        audio = load_audio(path, max_audio_s=self.settings.max_audio_s)
        t = Transcriber(self.settings).transcribe(audio, prompt_terms=prompt_terms)
        if t.no_speech:  # silence or noise is a recording to redo, never an empty answer to grade
            raise BadAudio(
                f"No speech detected in the recording ({t.duration_s:g} s): check the microphone and record it again."
            )
        delivery = {k: v for k, v in t.to_json().items() if k != "text"}
        # numpy numbers -> plain JSON: the graph state must serialize in any checkpointer
        return Transcription(t.text, json.loads(json.dumps(delivery, default=_plain)))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Services:
    """Shared, lazily built dependencies of every interview (thread-safe)."""

    def __init__(
        self,
        settings: Settings,
        *,
        bank: Bank | None = None,
        store: Store | None = None,
        progress: ProgressStore | None = None,
        graders: dict[str, Grader] | None = None,  # backend name -> grader
        llms: dict[str, LLMBackend] | None = None,  # backend name -> LLM
        speech: Speech | None = None,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self._bank = bank
        self._store = store
        self._progress = progress
        self._graders: dict[str, Grader] = dict(graders or {})
        self._llms: dict[str, LLMBackend] = dict(llms or {})
        self._speech = speech
        self.now = now
        self._lock = threading.RLock()

    @property
    def bank(self) -> Bank:
        with self._lock:
            if self._bank is None:
                from .bank import load_bank

                self._bank = load_bank(self.settings)
            return self._bank

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                from .store import Store

                self._store = Store(self.settings)
            return self._store

    @property
    def progress(self) -> ProgressStore:
        with self._lock:
            if self._progress is None:
                from .progress import ProgressStore

                self._progress = ProgressStore(self.settings.progress_path)
            return self._progress

    @property
    def speech(self) -> Speech:
        with self._lock:
            if self._speech is None:
                self._speech = WhisperSpeech(self.settings)
            return self._speech

    def grader(self, backend: str) -> Grader:
        """The grader for a session on `backend` (an LLM backend grades with the LLM grader)."""
        with self._lock:
            if backend not in self._graders:
                from .grading import make_grader

                name = self.settings.grader if backend == "rubric" else backend
                self._graders[backend] = make_grader(name, self.settings)
            return self._graders[backend]

    def llm(self, backend: str) -> LLMBackend | None:
        """The LLM that phrases questions, or None for the template-only `rubric` backend."""
        if backend == "rubric":
            return None
        with self._lock:
            if backend not in self._llms:
                from .llm import make_backend

                self._llms[backend] = make_backend(backend, self.settings)
            return self._llms[backend]

    def close(self) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.close()
                self._progress = None


@dataclass(frozen=True)
class Context:
    """What every graph node gets at run time (LangGraph's `context_schema`)."""

    services: Services
