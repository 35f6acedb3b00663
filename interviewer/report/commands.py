"""`interviewer report`: build the weakness report and write it as Markdown or HTML."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from interviewer.errors import BadInput
from interviewer.interview.session import SessionManager
from interviewer.report.build import build_report
from interviewer.report.render import redact, to_html, to_markdown
from interviewer.settings import Settings


def run_report(settings: Settings, args: argparse.Namespace) -> int:
    """`interviewer report [--session ID | --last | --all] [--format md|html] [-o FILE]`."""
    manager = SessionManager(settings)
    try:
        session_id: str | None = args.session
        if not args.all and session_id is None:  # --last is the default
            session_id = manager.services.progress.last_session_id(unfinished=False)
            if session_id is None:
                raise BadInput("No session yet. Practise first: `interviewer practice` or `interviewer ui`.")
        report = build_report(manager, None if args.all else session_id)
        text = to_html(report, settings) if args.format == "html" else redact(to_markdown(report), settings)
    finally:
        manager.close()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
