"""Spoken answers in the app: the candidate reviews the transcript before it is graded.

The app transcribes a recording first (`ReviewedSpeech.draft`) and shows the
text editable with its speech figures. The edited text is then sent as
`AudioAnswer(confirm(draft_id, text))`; the graph's transcribe node asks this
same object for it (`transcribe`), so the answer is graded as spoken, with its
speech figures kept in the session's events.

    speech = ReviewedSpeech(WhisperSpeech(settings))
    draft_id, heard = speech.draft("/tmp/a.wav", ["BF16"])    # heard.text: "B F sixteen keeps..."
    manager.send(session_id, AudioAnswer(speech.confirm(draft_id, "BF16 keeps...")))

Silence is refused (`BadAudio`), never graded as an empty answer. This module
does no transcription itself (speech.py does, through `WhisperSpeech`).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections import OrderedDict
from dataclasses import replace

from interviewer.errors import BadAudio, BadInput
from interviewer.speech.base import Speech, Transcription

DRAFT_PREFIX = "reviewed-transcript:"
MAX_DRAFTS = 1000  # transcripts awaiting review, oldest dropped first
NO_SPEECH = (
    "No speech detected in the recording. Check the microphone and record the answer again, or type it."
)


# Whisper sometimes "hears" a lone filler in a beep or breath (a fake microphone's tone gave "uh,").
HESITATIONS = frozenset({"um", "umm", "uhm", "uh", "uhh", "er", "erm", "ah", "hmm", "hm", "mm", "mhm", "oh"})
# Words that on their own answer nothing, and that Whisper writes for a tone or noise the voice
# detector let through ("So, uh,", "Thank you."): a transcript of these alone is no answer.
EMPTY_WORDS = HESITATIONS | {"so", "well", "like", "okay", "ok", "yeah", "thank", "thanks", "you"}


def said_something(text: str) -> bool:
    """True when the transcript holds a word beyond hesitations and words that answer nothing.

    >>> said_something("uh,"), said_something("So, uh,"), said_something("Thank you."), said_something("")
    (False, False, False, False)
    >>> said_something("Um... BF16."), said_something("So you clip the gradients.")
    (True, True)
    """
    return any(w not in EMPTY_WORDS for w in re.findall(r"[a-z0-9']+", text.lower()))


class ReviewedSpeech:
    """The app's Speech: a recording is transcribed for review, and the reviewed text is graded.

    `draft(path, terms)` transcribes (refusing silence) and keeps the result under a
    draft id; `confirm(draft_id, text)` stores the candidate's edit and returns the
    "path" to send as `AudioAnswer`, which the graph's transcribe node hands back to
    `transcribe` — so the answer is graded as spoken, with its speech figures.
    """

    def __init__(self, inner: Speech) -> None:
        self.inner = inner  # the real transcriber (WhisperSpeech), or a fake in tests
        self._drafts: OrderedDict[str, Transcription] = OrderedDict()
        self._lock = threading.Lock()

    def _heard(self, path: str, prompt_terms: list[str]) -> Transcription:
        heard = self.inner.transcribe(path, prompt_terms)
        if heard.delivery.get("no_speech") or not said_something(heard.text):
            raise BadAudio(NO_SPEECH)  # never grade an empty (phantom) answer
        return heard

    def draft(self, path: str, prompt_terms: list[str]) -> tuple[str, Transcription]:
        heard = self._heard(path, prompt_terms)
        draft_id = uuid.uuid4().hex
        with self._lock:
            self._drafts[draft_id] = heard
            while len(self._drafts) > MAX_DRAFTS:
                self._drafts.popitem(last=False)
        return draft_id, heard

    def confirm(self, draft_id: str, text: str) -> str:
        if not text.strip():
            raise BadInput("The transcript is empty: record the answer again, or type it.")
        with self._lock:
            if draft_id not in self._drafts:
                raise BadInput("That recording was already sent (or has expired). Record the answer again.")
            self._drafts[draft_id] = replace(self._drafts[draft_id], text=text.strip())
        return DRAFT_PREFIX + draft_id

    def transcribe(self, path: str, prompt_terms: list[str]) -> Transcription:
        if not path.startswith(DRAFT_PREFIX):
            return self._heard(path, prompt_terms)
        with self._lock:
            reviewed = self._drafts.pop(path.removeprefix(DRAFT_PREFIX), None)
        if reviewed is None:
            raise BadAudio("The reviewed transcript is gone (was the app restarted?).")
        return reviewed
