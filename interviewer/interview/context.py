"""The graph's run-time context: heavy objects built once and shared by every session.

`Services` holds the bank, the vector store, the progress store, graders, LLM
backends and speech-to-text. Each is built on first use, under a lock, and
then shared (the app runs sessions in several threads). Tests pass
ready-made or fake ones to the constructor.

Speech sits behind the small `Speech` protocol (in `interviewer.speech.base`)
so the graph runs without Whisper.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from interviewer.corpus.bank import Bank, load_bank
from interviewer.corpus.store import Store
from interviewer.grading import Grader, make_grader
from interviewer.interview.policy import Overlap
from interviewer.interview.progress import ProgressStore
from interviewer.llm import LLMBackend, make_backend
from interviewer.settings import Settings
from interviewer.speech.base import Speech, WhisperSpeech

if TYPE_CHECKING:
    from interviewer.corpus.bank import Bank
    from interviewer.grading import Grader
    from interviewer.llm import LLMBackend


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
        self._overlap: Overlap | None = None
        self._lock = threading.RLock()

    @property
    def bank(self) -> Bank:
        with self._lock:
            if self._bank is None:
                self._bank = load_bank(self.settings)
            return self._bank

    @property
    def overlap(self) -> Overlap:
        """Which bank questions repeat each other (built once, for planning)."""
        with self._lock:
            if self._overlap is None:
                self._overlap = Overlap(list(self.bank))
            return self._overlap

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = Store(self.settings)
            return self._store

    @property
    def progress(self) -> ProgressStore:
        with self._lock:
            if self._progress is None:
                self._progress = ProgressStore(self.settings.database_url or self.settings.progress_path)
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
                self._graders[backend] = make_grader(self.settings.grading_backend(backend), self.settings)
            return self._graders[backend]

    def llm(self, backend: str) -> LLMBackend | None:
        """The LLM that phrases questions, or None for the template-only `rubric` backend."""
        if backend == "rubric":
            return None
        with self._lock:
            if backend not in self._llms:
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
