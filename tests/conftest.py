"""Shared fixtures. Every test gets its own data directory; nothing touches ~/.local."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """INTERVIEWER_HOME points at a fresh folder for every test."""
    home = tmp_path / "home"
    monkeypatch.setenv("INTERVIEWER_HOME", str(home))
    for var in (
        "INTERVIEWER_CHROMA_URL",
        "INTERVIEWER_CHECKPOINT_URL",
        "INTERVIEWER_LLM_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(scope="session")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose vector index and rubric vectors are built once for the whole run
    (as `interviewer index` does)."""
    from interviewer.corpus.bank import load_bank
    from interviewer.corpus.store import Store
    from interviewer.grading.rubric import RubricGrader
    from interviewer.settings import load_settings

    home = tmp_path_factory.mktemp("indexed-home")
    settings = load_settings(home=home)
    Store(settings).ensure_index(load_bank(settings))
    RubricGrader(settings).prime_bank()
    return home


@pytest.fixture
def indexed_home(built_index: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point INTERVIEWER_HOME at the shared, already-built index."""
    monkeypatch.setenv("INTERVIEWER_HOME", str(built_index))
    return built_index


@pytest.fixture
def settings(isolated_home: Path):  # type: ignore[no-untyped-def]
    from interviewer.settings import load_settings

    return load_settings()


# ---------------------------------------------------------------- interview sessions


class FakeSpeech:
    """The speech seam without Whisper: each audio path maps to a transcript, or to an error."""

    def __init__(self) -> None:
        self.transcripts: dict[str, object] = {}  # path -> text, or an exception to raise
        self.calls: list[tuple[str, list[str]]] = []

    def transcribe(self, path: str, prompt_terms: list[str]):  # type: ignore[no-untyped-def]
        from interviewer.speech.base import Transcription

        self.calls.append((path, prompt_terms))
        result = self.transcripts[path]
        if isinstance(result, Exception):
            raise result
        return Transcription(str(result), {"words_per_minute": 150.0, "fillers_per_minute": 2.0})


@pytest.fixture(scope="session")
def shared_store(built_index: Path):  # type: ignore[no-untyped-def]
    """The vector store built once; sessions read it, never write it."""
    from interviewer.corpus.store import Store
    from interviewer.settings import load_settings

    return Store(load_settings(home=built_index))


@pytest.fixture
def fake_speech() -> FakeSpeech:
    return FakeSpeech()


@pytest.fixture
def services(settings, shared_store, fake_speech):  # type: ignore[no-untyped-def]
    """Shared services on the test's own data directory, with the shared index and fake speech."""
    from interviewer.interview.context import Services

    svc = Services(settings, store=shared_store, speech=fake_speech)
    yield svc
    svc.close()


@pytest.fixture
def manager(settings, services):  # type: ignore[no-untyped-def]
    """A session manager whose graph is compiled with an in-memory checkpointer."""
    from langgraph.checkpoint.memory import InMemorySaver

    from interviewer.interview.session import SessionManager

    return SessionManager(settings, services=services, checkpointer=InMemorySaver())
