"""Transcription measured on real human speech, not synthetic voices.

    python evals/speech/human_wer.py [--models tiny.en base] [--limit 400] [--out evals/speech]

Clips and transcripts come from Debian packages (`.ci/run` installs them):
- `pocketsphinx-testdata`: 5 LibriVox sentences and 5 spoken card names (BSD-2 / public
  domain), 16 kHz;
- `asterisk-core-sounds-en-wav` with the transcripts of `asterisk-core-sounds-en`
  (`core-sounds-en.txt.gz`, lines "name: text"): prompts read by a professional voice,
  8 kHz telephone audio, CC-BY-SA-3.0.
Reported per model: word error rate (words, not characters, after one normaliser applied
alike to the reference and the hypothesis: lower case, no punctuation, spoken numbers as
digits) and real-time factor (transcription seconds / audio seconds). Prompts are left out
that say only key names ("press * or #") or spell letters, where a transcript has no one
right spelling. `sample()` is the fixed 12-clip sample the CI test holds to a floor.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from interviewer.grading.numbers import words_to_digits
from interviewer.settings import load_settings
from interviewer.speech.transcription import Transcriber, load_audio

HERE = Path(__file__).resolve().parent
POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
ASTERISK = Path("/usr/share/asterisk/sounds/en")
ASTERISK_TEXT = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
# One typo in the LibriVox reference ("a more a amiable"), set right.
FIXES = {"a more a amiable": "a more amiable"}
SKIP_DIRS = ("letters/", "phonetic/", "silence/")  # spelled letters and silence: no one spelling


@dataclass(frozen=True)
class Clip:
    name: str
    path: Path
    text: str


def normalise(text: str) -> list[str]:
    """Lower case, no punctuation, numbers as digits: 'Ten of Clubs.' -> ['10', 'of', 'clubs']."""
    text = text.lower().replace("-", " ").replace("cannot", "can not")
    text = re.sub(r"[^a-z0-9.' ]+", " ", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    return words_to_digits(text).split()


def word_errors(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions, deletions)."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def pocketsphinx_clips() -> list[Clip]:
    out = []
    for folder, listing in (("librivox", "transcription"), ("cards", "cards.transcription")):
        path = POCKETSPHINX / folder / listing
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.+)\)", line.strip())
            if m:
                text = m.group(1).strip()
                for wrong, right in FIXES.items():
                    text = text.replace(wrong, right)
                out.append(Clip(f"{folder}/{m.group(2)}", POCKETSPHINX / folder / f"{m.group(2)}.wav", text))
    return out


def asterisk_clips() -> list[Clip]:
    if not ASTERISK_TEXT.exists():
        return []
    out = []
    with gzip.open(ASTERISK_TEXT, "rt", encoding="utf-8", errors="replace") as listing:
        rows = listing.read().splitlines()
    for line in rows:
        name, sep, text = line.partition(":")
        name, text = name.strip(), text.strip()
        if not sep or name.startswith(";") or not text or name.startswith(SKIP_DIRS):
            continue
        if re.search(r"[*#]|\b[A-Z]\b(?! ?[a-z])", text.replace("I ", "")) or "[" in text:
            continue  # key names, spelled letters, stage directions
        path = ASTERISK / f"{name}.wav"
        if path.exists():
            out.append(Clip(f"asterisk/{name}", path, text))
    return out


def all_clips() -> list[Clip]:
    return pocketsphinx_clips() + asterisk_clips()


def sample() -> list[Clip]:
    """The fixed CI sample: the 5 LibriVox sentences, and 7 asterisk prompts of 6 words or more."""
    librivox = [c for c in pocketsphinx_clips() if c.name.startswith("librivox/")]
    prompts = sorted((c for c in asterisk_clips() if len(c.text.split()) >= 6), key=lambda c: c.name)
    return librivox + prompts[:: max(1, len(prompts) // 7)][:7]


def measure(model: str, clips: list[Clip]) -> dict:
    settings = load_settings().model_copy(update={"whisper_model": model})
    transcriber = Transcriber(settings)
    transcriber.transcribe(load_audio(clips[0].path))  # load and warm up outside the timing
    errors = words = 0
    audio_s = spent = 0.0
    worst = []
    for clip in clips:
        audio = load_audio(clip.path)
        t0 = time.perf_counter()
        heard = transcriber.transcribe(audio)
        spent += time.perf_counter() - t0
        audio_s += len(audio) / 16_000
        ref, hyp = normalise(clip.text), normalise(heard.text)
        e = word_errors(ref, hyp)
        errors, words = errors + e, words + len(ref)
        if e:
            worst.append((e / max(len(ref), 1), clip.name, clip.text, heard.text))
    worst.sort(reverse=True)
    return {
        "model": model,
        "clips": len(clips),
        "words": words,
        "wer": round(errors / max(words, 1), 4),
        "rtf": round(spent / max(audio_s, 1e-9), 3),
        "audio_s": round(audio_s, 1),
        "worst": [{"clip": n, "reference": r, "heard": h, "wer": round(w, 3)} for w, n, r, h in worst[:8]],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["tiny.en"])
    ap.add_argument("--limit", type=int, default=0, help="at most this many clips (0: all)")
    ap.add_argument("--sample", action="store_true", help="only the fixed 12-clip CI sample")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    clips = sample() if args.sample else all_clips()
    if args.limit:
        clips = clips[: args.limit]
    if not clips:
        print(
            "No human speech found: apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav "
            "asterisk-core-sounds-en",
            file=sys.stderr,
        )
        return 2
    results = [measure(m, clips) for m in args.models]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "human-wer.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for r in results:
        print(f"{r['model']}: WER {100 * r['wer']:.1f} % on {r['clips']} clips ({r['words']} words, "
              f"{r['audio_s']:.0f} s of audio), {r['rtf']:.2f}x real time")  # fmt: skip
    print(
        f"median clip length {statistics.median(len(c.text.split()) for c in clips)} words", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
