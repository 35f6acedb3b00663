"""What the interview needs of speech: a recording in, a transcript with its delivery figures out.

`Speech` is the small protocol the graph talks to, so that it runs without
Whisper in tests; `WhisperSpeech` is the real one (faster-whisper through
`transcription`, loaded on first use).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from interviewer.errors import BadAudio
from interviewer.settings import Settings
from interviewer.speech.transcription import Transcriber, load_audio


@dataclass(frozen=True)
class Transcription:
    text: str
    delivery: dict[str, Any] = field(default_factory=dict)  # wpm, fillers, long pauses


class Speech(Protocol):
    def transcribe(self, path: str, prompt_terms: list[str]) -> Transcription:
        """Text of a recorded answer. Raises BadAudio (re-record) or BackendUnavailable."""
        ...


class WhisperSpeech:
    """faster-whisper via `interviewer.speech.transcription`, imported on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def transcribe(self, path: str, prompt_terms: list[str]) -> Transcription:
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
