"""Does a spoken answer get the same grade as its typed twin?

Each answer is graded as typed, then spoken with espeak-ng, transcribed by
`interviewer.speech.transcription` (with the question's terms as the prompt, as the app
does) and graded again. Reports how many pairs land within half a point.

Usage:  python evals/speech/spoken_vs_typed.py [--out evals/speech/spoken_vs_typed.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.grades import load_answers
from interviewer.grading.rubric import RubricGrader
from interviewer.settings import load_settings
from interviewer.speech.transcription import Transcriber, load_audio, question_terms

sys.path.insert(0, str(Path(__file__).parent))
from run_wer import ANSWERS, speak


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(Path(__file__).with_name("spoken_vs_typed.json")))
    args = parser.parse_args()
    settings = load_settings()
    bank = load_bank(settings)
    grader = RubricGrader(settings)
    transcriber = Transcriber(settings)
    # The speech eval's answers, plus partial answers from the calibration split
    # (mid-range grades are where a few misheard words would move the score).
    partial = [(a.question_id, a.answer) for a in load_answers(split="calibration") if a.tier == "partial"][
        :6
    ]
    pairs = list(ANSWERS) + partial
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (qid, text) in enumerate(pairs):
            question = bank.get(qid)
            typed = grader.grade(question, text).score
            wav = speak(text, Path(tmp) / f"a{i}.wav")
            heard = transcriber.transcribe(load_audio(str(wav)), prompt_terms=question_terms(question))
            spoken = grader.grade(question, heard.text).score
            rows.append({"question_id": qid, "typed": typed, "spoken": spoken, "transcript": heard.text})
            print(f"{qid}: typed {typed:g}  spoken {spoken:g}  |d|={abs(typed - spoken):g}", file=sys.stderr)
    within = sum(abs(r["typed"] - r["spoken"]) <= 0.5 for r in rows)
    result = {
        "answers": len(rows),
        "within_half_point": within,
        "share": round(within / len(rows), 3),
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{within}/{len(rows)} spoken answers graded within 0.5 of their typed twin")
    return 0


if __name__ == "__main__":
    sys.exit(main())
