"""The interviewer's voice, read back: does Whisper hear the bank's jargon as it was meant?

    python evals/speech/voice_readback.py [--lines 20] [--repeats 3] [--voices piper flite espeak-ng] [--out evals/speech]

Takes the bank questions' spoken `ask` lines that name a term of
`interviewer/speech/pronunciation.yaml`, says each with every installed voice, once as
written and once in its spoken form (the table applied), transcribes it back with the
default Whisper model and reports, per voice and form: word error rate against the line
(both sides through the table and lower-cased, spoken numbers as digits, spelled-out
letters joined: "FP8", "F P 8" and "fp8" are one word; "LR" and "learning rate" agree;
a compound heard as its two halves is one word: "warm up" is "warmup"), the share of
jargon terms heard right, and the synthesis real-time factor (including the engine's start).
Piper samples its prosody (noise scales), so one pass over 20 lines moves by 1-3 points of
WER from run to run: each line is said `--repeats` times and the errors pooled.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.settings import load_settings
from interviewer.speech.transcription import Transcriber, load_audio
from interviewer.speech.voice import Voice, pronunciation, speak, speak_as_written, spoken_form, voice_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from human_wer import normalise, word_errors

HERE = Path(__file__).resolve().parent


def compact(words: list[str]) -> list[str]:
    """Join spelled-out letters (and the number after them): ['f', 'p', '8'] -> ['fp8'];
    a word of two letters or more, or a lone letter, stays as it is."""
    out: list[str] = []
    run: list[str] = []
    for w in [*words, ""]:
        if len(w) == 1 and w.isalpha():
            run.append(w)
            continue
        if len(run) >= 2:
            out.append("".join(run) + (w if w.isdigit() else ""))
            if not w.isdigit() and w:
                out.append(w)
        else:
            out += run + ([w] if w else [])
        run = []
    return out


def heard_words(text: str) -> list[str]:
    text = re.sub(r"\b([A-Za-z]{1,4})-(\d+)\b", r"\1\2", text.replace("'s", "s"))  # "BF-16" is "BF16"
    return compact(normalise(text))


def join_compounds(hyp: list[str], ref: list[str]) -> list[str]:
    """Two heard words that make one word of the line are that word: a listener hears
    "warmup" and "warm up" alike.

    >>> join_compounds(["a", "warm", "up", "phase"], ["a", "warmup", "phase"])
    ['a', 'warmup', 'phase']
    """
    said = set(ref)
    out: list[str] = []
    for w in hyp:
        if out and out[-1] + w in said and out[-1] not in said:
            out[-1] += w
        else:
            out.append(w)
    return out


def lines(n: int) -> list[str]:
    terms = pronunciation().terms
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(t) for t in terms) + r")(?![\w-])")
    asks = [q.ask for q in load_bank(load_settings()) if getattr(q, "ask", "") and pattern.search(q.ask)]
    return asks[:n]


def measure(voice: Voice, texts: list[str], transcriber: Transcriber, spoken: bool, repeats: int = 1) -> dict:
    jargon = {w for say in pronunciation().terms.values() for w in heard_words(say) if len(w) > 1}
    misheard: list[tuple[float, str, str]] = []
    errors = words = hits = named = 0
    synth = audio = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for n, text in enumerate(texts * repeats):
            path = Path(tmp) / f"{n}.wav"
            said = speak(text, path, voice) if spoken else speak_as_written(text, path, voice)
            synth, audio = synth + said.seconds, audio + said.audio_s
            heard = transcriber.transcribe(load_audio(path)).text
            # both sides through the table: "LR" and "learning rate", "FP8" and "F P 8" are one
            ref, hyp = heard_words(spoken_form(text)), heard_words(spoken_form(heard))
            hyp = join_compounds(hyp, ref)
            if errors_of := word_errors(ref, hyp):
                misheard.append((errors_of / max(len(ref), 1), " ".join(ref), " ".join(hyp)))
            errors, words = errors + word_errors(ref, hyp), words + len(ref)
            for t in {w for w in ref if w in jargon}:
                named += 1
                hits += t in hyp
    return {"voice": voice.name, "form": "spoken" if spoken else "as written", "lines": len(texts),
            "repeats": repeats,
            "wer": round(errors / max(words, 1), 4), "jargon_heard": f"{hits}/{named}",
            "synthesis_rtf": round(synth / max(audio, 1e-9), 3),
            "worst": [{"said": r, "heard": h} for _, r, h in sorted(misheard, reverse=True)[:5]]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="times each line is said (Piper varies)")
    ap.add_argument("--voices", nargs="+", default=["piper", "flite", "espeak-ng"])
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    texts = lines(args.lines)
    transcriber = Transcriber(load_settings())
    results = []
    for name in args.voices:
        try:
            voice = voice_for(name)
        except Exception as exc:
            print(f"{name}: skipped ({exc})", file=sys.stderr)
            continue
        for spoken in (False, True):
            r = measure(voice, texts, transcriber, spoken, args.repeats)
            results.append(r)
            print(f"{r['voice']:<10} {r['form']:<11} WER {100 * r['wer']:.1f} %, jargon heard {r['jargon_heard']}, "
                  f"synthesis {r['synthesis_rtf']:.2f}x real time")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "voice-readback.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
