"""The `interviewer` command line. Parses flags, builds settings, dispatches.

Each subcommand's work lives in its own module (imported lazily, so
`interviewer --help` is instant). Library errors become one clean line on
stderr and exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .errors import InterviewerError

Handler = Callable[[argparse.Namespace], int]


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from .settings import load_settings

    return load_settings(backend=getattr(args, "backend", None))


def cmd_index(args: argparse.Namespace) -> int:
    from .corpus_cli import run_index

    return run_index(_settings(args))


def cmd_questions(args: argparse.Namespace) -> int:
    from .corpus_cli import run_questions

    return run_questions(_settings(args), args)


def cmd_search(args: argparse.Namespace) -> int:
    from .corpus_cli import run_search

    return run_search(_settings(args), args)


def cmd_ingest(args: argparse.Namespace) -> int:
    from .corpus_cli import run_ingest

    return run_ingest(_settings(args), args)


def cmd_grade(args: argparse.Namespace) -> int:
    from .grading.cli import run_grade

    return run_grade(_settings(args), args)


def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluation import run_eval

    return run_eval(_settings(args), args)


def cmd_practice(args: argparse.Namespace) -> int:
    from .terminal import run_practice

    return run_practice(_settings(args), args)


def cmd_transcribe(args: argparse.Namespace) -> int:
    from .speech import run_transcribe

    return run_transcribe(_settings(args), args)


def cmd_ui(args: argparse.Namespace) -> int:
    from .app import run_ui

    return run_ui(_settings(args), args)


def cmd_report(args: argparse.Namespace) -> int:
    from .report import run_report

    return run_report(_settings(args), args)


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    return run_bench(_settings(args), args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="interviewer",
        description="Mock interviews on ML training: questions, graded answers, follow-ups.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="build or update the vector store (no-op when nothing changed)")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("questions", help="list the question bank")
    p.add_argument("--source", help="document id: 000, 002, 003, 004, or a user document")
    p.add_argument("--topic", action="append", help="topic (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_questions)

    p = sub.add_parser("search", help="semantic search over the corpus")
    p.add_argument("text")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("ingest", help="add your own Markdown, text or PDF documents")
    p.add_argument("paths", nargs="+")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("grade", help="grade an answer against a rubric or a reference answer")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--question-id")
    which.add_argument("--question")
    which.add_argument("--batch", metavar="IN.jsonl")
    p.add_argument("--reference")
    ans = p.add_mutually_exclusive_group()
    ans.add_argument("--answer")
    ans.add_argument("--answer-file")
    p.add_argument("--out", metavar="OUT.jsonl")
    p.add_argument("--backend", default=None, help="rubric (default), openai, openai-compatible, llama-cpp")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("eval", help="run the offline grading eval set")
    p.add_argument("--backend", default=None)
    p.add_argument("--split", choices=["calibration", "held-out", "all"], default="held-out")
    p.add_argument("--runs", type=int, default=5, help="test-retest runs")
    p.add_argument(
        "--questions", type=int, default=None, help="only the first N questions (slow LLM backends)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("practice", help="a mock interview in the terminal")
    p.add_argument("--topic", action="append")
    p.add_argument("--difficulty", choices=["easy", "medium", "hard"])
    p.add_argument("--source")
    p.add_argument("--questions", type=int, default=3)
    p.add_argument("--mode", choices=["drill", "interview"], default="interview")
    p.add_argument("--backend", default=None)
    p.add_argument("--json-log", metavar="FILE")
    p.add_argument("--resume", metavar="ID", help="a session id, or 'last'")
    p.set_defaults(func=cmd_practice)

    p = sub.add_parser("transcribe", help="transcribe a spoken answer and measure the delivery")
    p.add_argument("file")
    p.add_argument("--question-id", help="prompt the model with this question's terms")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_transcribe)

    p = sub.add_parser("ui", help="the Gradio mock-interview app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--share", action="store_true", help="public Gradio link (off by default)")
    p.set_defaults(func=cmd_ui)

    p = sub.add_parser("report", help="the weakness report")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--session")
    g.add_argument("--last", action="store_true")
    g.add_argument("--all", action="store_true")
    p.add_argument("--format", choices=["md", "html"], default="md")
    p.add_argument("-o", "--output")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("bench", help="measure speed and memory on this machine against the targets")
    p.add_argument("--quick", action="store_true", help="fewer repetitions (under 3 minutes)")
    p.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InterviewerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
