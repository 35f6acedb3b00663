"""The web app: `interviewer ui` serves one mock interview per browser tab.

    manager = make_manager(settings)
    build_app(settings, manager).launch(**launch_options(settings, host="127.0.0.1", port=7860))

Each tab keeps its session id in the tab's `sessionStorage`, so a reload
resumes the session (its LangGraph thread) and a second tab starts its own;
`localStorage` (gr.BrowserState) is shared by every tab of the browser. A
spoken answer is transcribed first and shown editable with its speech figures;
the candidate's reviewed text is what gets graded (`ReviewedSpeech`).

Programs drive sessions through three API endpoints with an explicit session
id (gradio_client: `client.predict(..., api_name="/answer")`): `start`,
`transcribe` and `answer`. The page layout is in app_layout.py, the Markdown
views in app_views.py; this module holds the handlers and the launch.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Any

import gradio as gr

from interviewer.app.handlers import LOCAL_HOSTS, Interviews, concurrency, make_manager
from interviewer.app.layout import CSS, END_OF_ANSWER_JS, layout
from interviewer.errors import BadInput
from interviewer.interview.session import SessionManager
from interviewer.logs import add_log_file
from interviewer.settings import Settings


def build_app(
    settings: Settings, manager: SessionManager, *, interviews: Interviews | None = None
) -> gr.Blocks:
    """The Blocks app (not launched). `manager` comes from `make_manager(settings)`."""
    return layout(interviews or Interviews(settings, manager), concurrency(settings))


log = logging.getLogger(__name__)


def launch_options(
    settings: Settings, host: str = "127.0.0.1", port: int | None = 7860, share: bool = False
) -> dict[str, Any]:
    """Keyword arguments of `Blocks.launch`: local only, no share link, a password when configured."""
    auth = None
    if settings.auth is not None:
        user, _, password = settings.auth.get_secret_value().partition(":")
        if not user or not password:
            raise BadInput("INTERVIEWER_AUTH must look like user:password.")
        auth = (user, password)
    return {
        "server_name": host,
        "server_port": port,
        "share": bool(share),
        "auth": auth,
        "auth_message": "This interviewer is password protected." if auth else None,
        "ssr_mode": False,
        "footer_links": ["api"],
        "show_error": False,
        "css": CSS,
        "head": END_OF_ANSWER_JS % {"silence_s": settings.voice_silence_s},
    }


def stop_on_sigterm() -> None:
    """SIGTERM (`kill`, a service manager, a container stopping) closes the app as Ctrl-C does:
    the server stops and the sessions' store is closed, instead of the process dying mid-write."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def run_ui(settings: Settings, args: argparse.Namespace) -> int:
    """`interviewer ui [--host H] [--port P] [--share]`: serve the app until Ctrl-C."""
    log_file = add_log_file(settings.home)
    log.info("interviewer ui on %s:%s with %r (log: %s)", args.host, args.port, settings, log_file)
    options = launch_options(settings, args.host, args.port, args.share)
    if (args.host not in LOCAL_HOSTS or args.share) and options["auth"] is None:
        print(
            "warning: the app is reachable from other machines without a password; set "
            "INTERVIEWER_AUTH=user:password to require one.",
            file=sys.stderr,
        )
    manager = make_manager(settings)
    interviews = Interviews(settings, manager)
    interviews.warm_up_in_background()
    app = build_app(settings, manager, interviews=interviews)
    stop_on_sigterm()
    try:
        app.launch(**options)
    finally:
        interviews.settle()  # a model still loading in the background must not abort the exit
        manager.close()
    return 0
