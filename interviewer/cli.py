"""The `interviewer` command line: a table of commands, each a function in its wing.

Each row names the function that does the work as "module:function"; it is
imported only when its command runs, so `interviewer --help` stays instant.
Every function takes `(settings, args)` and returns an exit code. Library
errors become one clean line on stderr and exit code 2; anything else is a bug
and keeps its traceback (in the log too).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from interviewer.errors import InterviewerError
from interviewer.logs import configure_logging
from interviewer.settings import load_settings

log = logging.getLogger(__name__)

BACKEND_HELP = (
    "grader: rubric (default, no LLM), openai, openai-compatible, llama-cpp (or INTERVIEWER_BACKEND)"
)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    target: str  # "module:function", called as function(settings, args) -> exit code
    arguments: Callable[[argparse.ArgumentParser], None]

    def run(self, args: argparse.Namespace) -> int:
        module, _, function = self.target.partition(":")
        settings = load_settings(
            backend=getattr(args, "backend", None),
            verify=getattr(args, "verify", None),
            claim_reader=getattr(args, "claim_reader", None),
        )
        handler = getattr(importlib.import_module(module), function)
        return int(handler(settings, args))


def _index_args(p: argparse.ArgumentParser) -> None:
    pass


def _filter_args(p: argparse.ArgumentParser) -> None:
    """Which bank questions: the same options for listing them and for practising on them."""
    p.add_argument(
        "--topic",
        action="append",
        help="only this topic, e.g. learning-rate, precision, batch-size (repeatable; "
        "`interviewer questions` shows each question's topic)",
    )
    p.add_argument("--difficulty", choices=["easy", "medium", "hard"], help="only this difficulty")
    p.add_argument("--source", help="only this document: 000, 002, 003, 004, or a user document's id")


def _questions_args(p: argparse.ArgumentParser) -> None:
    _filter_args(p)
    p.add_argument("--json", action="store_true", help="print the questions as JSON")


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", help="what to look for, in your own words")
    p.add_argument("--k", type=int, default=5, help="how many passages (default 5)")
    p.add_argument("--json", action="store_true", help="print the passages as JSON")


def _ingest_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", help="Markdown, text or PDF files")


def _reader_args(p: argparse.ArgumentParser) -> None:
    """The embedded grader's opt-in readers, on every command that grades."""
    p.add_argument(
        "--verify",
        metavar="BACKEND",
        help="second reader for the embedded grader: an LLM backend (llama-cpp, openai-compatible, openai) "
        "asked whether each credited point's sentence says it (slower; or INTERVIEWER_VERIFY)",
    )
    p.add_argument(
        "--claim-reader",
        metavar="MODEL",
        help="the embedded grader reads each claim with a small language model too: smollm2, a .gguf "
        "file or a Hugging Face model (about 0.5 s a grade; or INTERVIEWER_CLAIM_READER)",
    )


def _grade_args(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group()
    which.add_argument("--question-id", metavar="ID", help="a bank question's id, e.g. 002-07")
    which.add_argument(
        "--question", metavar="TEXT", help="a bank question's text, or any question with --reference"
    )
    which.add_argument(
        "--batch",
        metavar="IN.jsonl",
        help="one answer a line: {question_id or question, answer, [reference]}",
    )
    p.add_argument("--reference", metavar="TEXT", help="a reference answer to grade against (no rubric)")
    ans = p.add_mutually_exclusive_group()
    ans.add_argument("--answer", metavar="TEXT", help="the answer to grade")
    ans.add_argument("--answer-file", metavar="FILE", help="the answer to grade, from a text file")
    p.add_argument("--out", metavar="OUT.jsonl", help="with --batch: where the grades go (default: stdout)")
    p.add_argument("--backend", default=None, help=BACKEND_HELP)
    _reader_args(p)
    p.add_argument("--json", action="store_true", help="print the grade and its evidence as JSON")


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default=None, help=BACKEND_HELP)
    p.add_argument(
        "--split",
        choices=["calibration", "held-out", "all"],
        default="held-out",
        help="which graded answers: held-out (default; never fitted on), calibration or all",
    )
    p.add_argument("--out", metavar="DIR", help="results folder (default: evals/results in a checkout)")
    p.add_argument("--runs", type=int, default=5, help="test-retest runs")
    p.add_argument(
        "--questions", type=int, default=None, help="only the first N questions (slow LLM backends)"
    )
    _reader_args(p)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


def _practice_args(p: argparse.ArgumentParser) -> None:
    _filter_args(p)
    p.add_argument("--questions", type=int, default=3, help="how many bank questions (default 3)")
    p.add_argument(
        "--mode",
        choices=["drill", "interview"],
        default="interview",
        help="interview (default): follow-ups on what you missed; drill: one answer a question",
    )
    p.add_argument("--backend", default=None, help=BACKEND_HELP)
    p.add_argument(
        "--json-log", metavar="FILE", help="append every event of the session to FILE as JSON lines"
    )
    p.add_argument("--resume", metavar="ID", help="a session id, or 'last'")
    p.add_argument(
        "--speak", action="store_true", help="say the interviewer's lines (WAV files where no audio output)"
    )
    p.add_argument("--listen", action="store_true", help="answer into the default microphone")
    _reader_args(p)


def _speak_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", help="the line to say")
    p.add_argument("--out", required=True, metavar="FILE.wav", help="where the WAV file goes")
    p.add_argument("--voice", help="auto (default), piper, flite, espeak-ng, or a Piper .onnx voice file")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")


def _transcribe_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a recorded answer (WAV, MP3, M4A, WebM, OGG)")
    p.add_argument("--question-id", help="prompt the model with this question's terms")
    p.add_argument("--json", action="store_true", help="print the transcript and delivery as JSON")


def _ui_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)"
    )
    p.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    p.add_argument("--share", action="store_true", help="public Gradio link (off by default)")


def _report_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--session", metavar="ID", help="one session")
    g.add_argument("--last", action="store_true", help="the most recent finished session (the default)")
    g.add_argument("--all", action="store_true", help="every session so far")
    p.add_argument("--format", choices=["md", "html"], default="md", help="Markdown (default) or HTML")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (default: stdout)")


def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="fewer repetitions (under 3 minutes)")
    p.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    p.add_argument("--out", metavar="DIR", help="results folder (default: evals/results in a checkout)")


COMMANDS: tuple[Command, ...] = (
    Command(
        "index",
        "build or update the vector store (no-op when nothing changed)",
        "interviewer.grading.commands:run_index",
        _index_args,
    ),
    Command(
        "questions", "list the question bank", "interviewer.corpus.commands:run_questions", _questions_args
    ),
    Command(
        "search", "semantic search over the corpus", "interviewer.corpus.commands:run_search", _search_args
    ),
    Command(
        "ingest",
        "add your own Markdown, text or PDF documents",
        "interviewer.corpus.commands:run_ingest",
        _ingest_args,
    ),
    Command(
        "grade",
        "grade an answer against a rubric or a reference answer",
        "interviewer.grading.commands:run_grade",
        _grade_args,
    ),
    Command("eval", "run the offline grading eval set", "interviewer.evaluation.grades:run_eval", _eval_args),
    Command(
        "practice",
        "a mock interview in the terminal",
        "interviewer.interview.terminal:run_practice",
        _practice_args,
    ),
    Command(
        "speak",
        "say a line in the interviewer's voice, into a WAV file",
        "interviewer.speech.voice:run_speak",
        _speak_args,
    ),
    Command(
        "transcribe",
        "transcribe a spoken answer and measure the delivery",
        "interviewer.speech.transcription:run_transcribe",
        _transcribe_args,
    ),
    Command("ui", "the Gradio mock-interview app", "interviewer.app.server:run_ui", _ui_args),
    Command("report", "the weakness report", "interviewer.report.commands:run_report", _report_args),
    Command(
        "bench",
        "measure speed and memory on this machine against the targets",
        "interviewer.evaluation.bench:run_bench",
        _bench_args,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="interviewer",
        description="Mock interviews on ML training: questions, graded answers, follow-ups.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more (-v info, -vv debug); or INTERVIEWER_LOG_LEVEL",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        command.arguments(p)
        p.set_defaults(command=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command: Command = args.command
    configure_logging(verbosity=args.verbose)
    try:
        return command.run(args)
    except InterviewerError as exc:
        log.debug("%s failed", command.name, exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:
        log.exception(
            "interviewer %s failed with an unexpected error (please report it, with this log)", command.name
        )
        raise


if __name__ == "__main__":
    sys.exit(main())
