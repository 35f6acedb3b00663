"""Speech eval: word error rate, speed and filler retention of `interviewer.speech.transcription`.

Synthesises spoken answers about ML training with espeak-ng (nothing is
downloaded; the audio is rebuilt on every run into a temporary folder), then
measures:

- WER of each answer under four prompts: the filler-keeping prefix only (what
  a free answer gets); plus the bank question's terms (what `transcribe
  --question-id` does), also from WebM/Opus as a browser uploads it; plus the
  terms as hotwords too; and plus the terms of a different question (an
  off-topic answer must not get worse);
- RTF (transcription seconds / audio seconds) on this machine;
- filler retention: fillers heard / fillers spoken, for a sentence with
  inserted fillers, with and without the filler-keeping prefix;
- phantom words over silence and noise (should be 0).

Usage:  python evals/speech/run_wer.py [--model tiny.en] [--out evals/speech/results.json]

espeak-ng is a robotic voice: absolute WER on real speech differs; the
comparison between prompts is what this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.settings import load_settings
from interviewer.speech.transcription import (
    Transcriber,
    count_fillers,
    load_audio,
    question_terms,
)

HERE = Path(__file__).resolve().parent

# (bank question id, a spoken answer to it). No digits: espeak and Whisper
# disagree on how to write numbers, which would measure the normaliser instead.
ANSWERS = [
    ("000-14", "FP16 has a narrow exponent range, so small gradients underflow to zero unless you "
               "multiply the loss by a scale factor before the backward pass. BF16 keeps the same "
               "exponent range as FP32, so it mostly trains without loss scaling."),
    ("002-07", "Warmup keeps the first updates small while the Adam second moment estimates are still "
               "noisy. Without it the effective step size is huge at the start and the loss can spike "
               "or diverge."),
    ("003-36", "ZeRO stage one shards the optimizer states across data parallel ranks, stage two also "
               "shards the gradients, and stage three shards the parameters themselves, gathering them "
               "just in time for each layer."),
    ("003-37", "DDP keeps a full replica of the model on every GPU and all reduces the gradients. FSDP "
               "shards parameters, gradients and optimizer states, and all gathers each layer's weights "
               "only when it runs, so it fits much larger models."),
    ("000-15", "Activation checkpointing stores only some activations in the forward pass and recomputes "
               "the rest during the backward pass. It trades extra compute, roughly one more forward "
               "pass, for a large cut in activation memory."),
    ("004-09", "AdamW decouples weight decay from the gradient update. With Adam plus an L2 penalty the "
               "decay term gets divided by the adaptive second moment, so weights with large gradients "
               "are barely regularized."),
    ("002-03", "A loss spike in the middle of training usually comes from a bad batch, a learning rate "
               "that is too high, or numerical overflow. I would check the gradient norm, skip the batch, "
               "and restart from the last checkpoint with a lower learning rate."),
    ("003-05", "Gradient accumulation runs several micro batches, adds up their gradients, and only then "
               "takes an optimizer step. You use it when the batch you want does not fit in GPU memory."),
    ("000-10", "Batch normalization normalizes each channel with the mean and variance of the mini batch, "
               "then applies a learned scale and shift. At evaluation time it switches to running "
               "averages, because a single example has no batch statistics."),
    ("003-11", "When the training loss becomes NaN, I first look for a learning rate that is too high, "
               "then for FP16 overflow, a division by zero or a log of zero in the loss, and bad inputs. "
               "Gradient clipping and anomaly detection help find the step where it breaks."),
]  # fmt: skip

FILLER_SENTENCE = (
    "Um, so, warmup keeps the first steps small, uh, because the Adam estimates are, like, noisy. "
    "You know, it is basically a safety margin. I mean, it is kind of cheap, and actually, hmm, "
    "it helps a lot. Uh, for the decay, um, I would sort of use cosine, like, down to a tenth of the "
    "peak. Erm, that is, you know, the usual recipe."
)

NOISES = {  # sox synth arguments for 5 s of non-speech
    "silence": [],
    "white noise": ["synth", "5", "whitenoise", "vol", "0.3"],
    "pink noise": ["synth", "5", "pinknoise", "vol", "0.5"],
    "brown noise": ["synth", "5", "brownnoise", "vol", "0.5"],
    "50 Hz hum": ["synth", "5", "sine", "50", "vol", "0.5"],
}


def speak(text: str, out: Path) -> Path:
    raw = out.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), text], check=True)
    # -D: no dither, so every run hears the same samples and the figures reproduce.
    subprocess.run(["sox", str(raw), "-D", "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    return out


def to_webm(wav: Path) -> bytes:
    """What a browser's MediaRecorder uploads: Opus in WebM."""
    out = wav.with_suffix(".webm")
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-i", str(wav), "-c:a", "libopus", str(out)]
    subprocess.run(cmd, check=True)
    return out.read_bytes()


def synth(args: list[str], out: Path) -> Path:
    base = ["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", str(out)]
    subprocess.run(base + (args or ["trim", "0", "5"]), check=True)
    return out


def normalise(text: str) -> list[str]:
    """Words for WER: lower case, no punctuation, "BF16" == "BF 16" == "B.F. 16"."""
    text = text.lower().replace("-", " ").replace("'s", "s")
    text = re.sub(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])", " ", text)
    merged: list[str] = []
    spelled = False  # is merged[-1] a run of single letters?
    for w in re.findall(r"[a-z0-9]+", text):
        letter = len(w) == 1 and w.isalpha() and w not in ("a", "i")
        if letter and spelled:
            merged[-1] += w
        else:
            merged.append(w)
        spelled = letter
    return merged


def wer(reference: str, hypothesis: str) -> tuple[int, int]:
    """(word edits, reference words), by Levenshtein distance over normalised words."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1], len(ref)


def retention(spoken: dict[str, int], heard: dict[str, int]) -> float:
    total = sum(spoken.values())
    return sum(min(n, heard.get(k, 0)) for k, n in spoken.items()) / total if total else 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="INTERVIEWER_WHISPER_MODEL (default tiny.en)")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = parser.parse_args()
    for tool in ("espeak-ng", "sox", "ffmpeg"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is missing: apt-get install -y espeak-ng sox ffmpeg")

    settings = load_settings(whisper_model=args.model)
    bank = load_bank(settings)
    plain = Transcriber(settings)
    with_hotwords = Transcriber(settings, use_hotwords=True)
    load_started = time.perf_counter()
    _ = plain.model
    load_s = time.perf_counter() - load_started

    conditions = ("fillers only", "+ terms", "+ terms, WebM", "+ terms + hotwords", "+ other q's terms")
    rows = []
    totals = {c: [0, 0] for c in conditions}
    rtfs = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        for i, (qid, text) in enumerate(ANSWERS):
            wav = speak(text, tmp_dir / f"{qid}.wav")
            audio = load_audio(wav)
            terms = question_terms(bank.get(qid))
            # An off-topic answer must not be pulled towards the question's words.
            other_terms = question_terms(bank.get(ANSWERS[(i + 1) % len(ANSWERS)][0]))
            runs = {
                "fillers only": plain.transcribe(audio),
                "+ terms": plain.transcribe(audio, prompt_terms=terms),
                "+ terms, WebM": plain.transcribe(to_webm(wav), prompt_terms=terms),
                "+ terms + hotwords": with_hotwords.transcribe(audio, prompt_terms=terms),
                "+ other q's terms": plain.transcribe(audio, prompt_terms=other_terms),
            }
            row = {"question_id": qid, "duration_s": runs["fillers only"].duration_s, "wer": {}, "text": {}}
            for cond, t in runs.items():
                edits, n = wer(text, t.text)
                totals[cond][0] += edits
                totals[cond][1] += n
                row["wer"][cond] = round(edits / n, 3)
                row["text"][cond] = t.text
                rtfs.append(t.rtf)
            rows.append(row)

        audio = load_audio(speak(FILLER_SENTENCE, tmp_dir / "fillers.wav"))
        spoken = count_fillers(FILLER_SENTENCE)
        kept = plain.transcribe(audio)
        bare_segments, _ = plain.model.transcribe(audio, language="en", beam_size=5, vad_filter=True)
        bare_text = " ".join(s.text.strip() for s in bare_segments)
        heard_bare = count_fillers(bare_text)
        fillers = {
            "spoken": spoken,
            "with prefix": {
                "heard": kept.filler_counts,
                "retention": round(retention(spoken, kept.filler_counts), 3),
                "fillers_per_minute": kept.fillers_per_minute,
                "text": kept.text,
            },
            "no prompt": {
                "heard": heard_bare,
                "retention": round(retention(spoken, heard_bare), 3),
                "text": bare_text,
            },
        }

        phantoms = {}
        for name, sox_args in NOISES.items():
            t = plain.transcribe(load_audio(synth(sox_args, tmp_dir / "noise.wav")))
            phantoms[name] = {"no_speech": t.no_speech, "text": t.text}

    results = {
        "model": settings.whisper_model,
        "machine": {
            "cpus": os.cpu_count(),
            "cpu_threads": 2,
            "load_average_1min": round(os.getloadavg()[0], 2),  # RTF grows when the CPUs are shared
            "python": platform.python_version(),
        },
        "model_load_s": round(load_s, 2),
        "wer": {c: round(e / n, 4) for c, (e, n) in totals.items()},
        "reference_words": totals[conditions[0]][1],
        "rtf": {"mean": round(statistics.mean(rtfs), 3), "max": round(max(rtfs), 3)},
        "fillers": fillers,
        "phantoms": phantoms,
        "answers": rows,
    }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    print(f"model {results['model']}  ({results['reference_words']} words in {len(ANSWERS)} answers)")
    print(f"{'question':<10}" + "".join(f"{c:>20}" for c in conditions))
    for row in rows:
        print(f"{row['question_id']:<10}" + "".join(f"{row['wer'][c]:>20.1%}" for c in conditions))
    print(f"{'WER':<10}" + "".join(f"{results['wer'][c]:>20.1%}" for c in conditions))
    print(f"RTF mean {results['rtf']['mean']:.3f}, max {results['rtf']['max']:.3f} "
          f"(model load {results['model_load_s']} s, {results['machine']['cpus']} CPUs)")  # fmt: skip
    print(f"filler retention: {fillers['with prefix']['retention']:.0%} with the prefix, "
          f"{fillers['no prompt']['retention']:.0%} without ({sum(spoken.values())} spoken)")  # fmt: skip
    clean = sum(p["no_speech"] for p in phantoms.values())
    print(f"silence/noise: {clean}/{len(phantoms)} gave no_speech")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
