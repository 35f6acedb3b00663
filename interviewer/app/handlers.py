"""The app's handlers: `Interviews` turns page events into session calls and page updates.

No layout here (`layout` builds the page and wires these handlers to it).
"""

from __future__ import annotations

import collections
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.data_classes import FileData

from interviewer.app.views import chat_messages, draft_figures, grade_panel, status_line
from interviewer.errors import BadAudio, BadInput, InterviewerError
from interviewer.interview.context import Services
from interviewer.interview.phrasing import spoken_line, spoken_parts
from interviewer.interview.session import AudioAnswer, SessionManager, SessionOptions, SessionView
from interviewer.interview.state import PROMPT_TYPES, Event
from interviewer.report.build import build_report
from interviewer.report.charts import draw_charts
from interviewer.report.render import redact, report_files, to_markdown
from interviewer.settings import Settings
from interviewer.speech.base import Transcription, WhisperSpeech
from interviewer.speech.review import ReviewedSpeech
from interviewer.speech.transcription import question_terms
from interviewer.speech.voice import Voice, speak, voice_for

log = logging.getLogger(__name__)


def concurrency(settings: Settings) -> int:
    """Turns processed at once. The embedded grader is CPU work: more threads than about two
    per core only fight over the GIL (16 sessions on 2 cores: p95 1.05 s at 16, 0.72 s at 4).
    An LLM backend mostly waits on its server, so it gets 16."""
    if settings.app_concurrency:
        return settings.app_concurrency
    if settings.backend != "rubric" or settings.grader != "rubric":
        return 16
    return max(2, 2 * (os.cpu_count() or 1))


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
# How long the voice of a hands-free turn waits for its grade (an LLM grade may retry).
HANDS_FREE_WAIT_S = 300.0


@dataclass
class HandsFreeTurn:
    """A recording sent without a click: `done` once its turn is over, `sent` if it was sent."""

    done: threading.Event = field(default_factory=threading.Event)
    sent: bool = False


def before_last(updates: Iterator[Any], hook: Callable[[], None]) -> Iterator[Any]:
    """Yield `updates`, running `hook` just before the last one goes out (the turn is over
    by then, and the page has not yet asked for what comes after it)."""
    last, started = None, False
    for update in updates:
        if started:
            yield last
        last, started = update, True
    hook()
    if started:
        yield last


def hands_free(voice_on: bool, review: bool, draft_id: str, text: str) -> bool:
    """A transcribed recording goes out by itself: a voice interview, no review asked for."""
    return voice_on and not review and bool(draft_id) and bool(text.strip())


PROGRESS = gr.Progress()  # Gradio gives each call its own tracker in its place


def make_manager(settings: Settings, **services: Any) -> SessionManager:
    """A session manager whose spoken answers go through `ReviewedSpeech`."""
    inner = services.pop("speech", None) or WhisperSpeech(settings)
    return SessionManager(settings, services=Services(settings, speech=ReviewedSpeech(inner), **services))


def _warn(exc: Exception, settings: Settings) -> None:
    log.info("shown to the user: %s", exc, exc_info=exc)
    gr.Warning(redact(str(exc), settings))  # a toast; the page keeps what the candidate had


class Interviews:
    """The app's handlers: UI events (`on_*`) and API endpoints (`api_*`)."""

    def __init__(self, settings: Settings, manager: SessionManager) -> None:
        speech = manager.services.speech
        if not isinstance(speech, ReviewedSpeech):
            raise TypeError(
                "build_app needs a manager from interviewer.app.handlers.make_manager (reviewed speech)."
            )
        self.settings, self.manager, self.speech = settings, manager, speech
        self.stage = "Starting…"
        self._ready = threading.Event()  # the grading model is loaded (or failed to)
        self._indexed = threading.Event()  # the vector index exists: a session can start
        self._error: InterviewerError | None = None
        self._warming = threading.Lock()
        self._started = False
        self._priming: threading.Thread | None = None  # the bank's rubric vectors, after the warm-up
        self._closing = threading.Event()  # set by `settle`: the background embedding stops
        self._voice: Voice | None = None
        self._voice_dir: Path | None = None  # made on the first spoken line
        self._voice_off: set[str] = set()  # sessions already told that the voice is off
        # The first part of a line is synthesized as soon as the turn's text is known, while
        # the page shows it and asks for the voice (`say_ahead`); one worker, as Piper has one.
        self._saying = ThreadPoolExecutor(max_workers=1, thread_name_prefix="voice")
        self._said_ahead: dict[Path, Future[Any]] = {}
        self._hands_free: dict[str, HandsFreeTurn] = {}  # by draft id, until its voice is said
        # each session's last transcription (draft id, transcript), as the server made it: the
        # page's copy can be cleared by the sending before the voice handler reads it
        self._transcribed: dict[str, tuple[str, str]] = {}
        self._hands_free_lock = threading.Lock()
        self._heard: collections.deque[str] = collections.deque(maxlen=256)  # recordings transcribed

    # -- warm-up: the first run builds the index; every run loads the grading model ----

    def warm_up(self) -> None:
        with self._warming:
            if self._started:
                return
            self._started = True
        try:
            services = self.manager.services
            if services.store.count() == 0:
                self.stage = "Building the vector index (first run only, about 30 s)…"
                self.manager.ensure_index()
            # A session can start now: asking a question needs no model, and the first grade
            # waits for the model loading below (it holds the model's lock) while the candidate
            # reads the question and thinks.
            self._indexed.set()
            backend = self.settings.backend
            if backend == "rubric":  # an LLM grader would make a paid call: it warms on first use
                self.stage = "Loading the grading model (about 10 s)…"
                question = next(iter(services.bank))
                grader = services.grader(backend)
                grader.grade(question, question.reference)
                self._priming = threading.Thread(target=self._prime_bank, args=(grader,),
                                                 name="interviewer-prime", daemon=True)  # fmt: skip
                self._priming.start()
        except InterviewerError as exc:
            log.warning("app warm-up failed; the first Start will show why", exc_info=True)
            self._error = exc
        except Exception:
            log.exception("app warm-up failed unexpectedly (please report it, with this log)")
            raise
        finally:
            self.stage = "Ready."
            self._indexed.set()
            self._ready.set()

    def _prime_bank(self, grader: Any) -> None:
        """Every rubric's vectors, from the data directory or computed (see `RubricGrader.prime_bank`)."""
        try:
            grader.prime_bank(stop=self._closing)
        except Exception:  # only a speed-up: a grade embeds what it lacks
            log.warning("embedding the bank's rubric vectors in the background failed", exc_info=True)

    def warm_up_in_background(self) -> None:
        threading.Thread(target=self.warm_up, name="interviewer-warm-up", daemon=True).start()

    def settle(self, timeout_s: float = 60.0) -> None:
        """Before the process exits: wait for the warm-up's model loading and embedding to end.
        An interpreter that exits while a background thread is inside torch's native code can
        abort (SIGABRT, "terminate called without an active exception") instead of exiting."""
        deadline = time.monotonic() + timeout_s
        self._closing.set()
        if self._started and not self._ready.is_set():
            log.info("waiting for the model warm-up to finish before exiting")
            self._ready.wait(timeout_s)
        priming = self._priming
        if priming is not None and priming.is_alive():  # it stops after the chunk it is on
            priming.join(max(0.0, deadline - time.monotonic()))

    def wait_ready(self, progress: Any = None, *, to_start: bool = False) -> None:
        """Until the warm-up is done, or with `to_start` only until a session can start
        (the index exists; the grading model may still be loading)."""
        self.warm_up_in_background()
        event = self._indexed if to_start else self._ready
        while not event.wait(0.5):
            if progress is not None:
                progress(None, desc=self.stage)
        if self._error is not None:
            raise self._error

    # -- shared steps ----------------------------------------------------

    def _options(
        self,
        topics: list[str] | None,
        difficulty: str | None,
        source: str | None,
        questions: float,
        mode: str,
        backend: str | None,
    ) -> SessionOptions:
        return SessionOptions(
            topics=tuple(topics or ()),
            difficulty=difficulty or None,
            source=source or None,
            questions=int(questions),
            mode=mode,  # type: ignore[arg-type]
            backend=backend or None,
        )

    def view(self, session_id: str | None) -> SessionView | None:
        if not session_id:
            return None
        try:
            return self.manager.state(session_id)
        except InterviewerError:
            return None

    def panels(self, view: SessionView | None) -> tuple[list[dict[str, str]], str, str]:
        """(chat, grade panel, status) of a session."""
        events = view.events if view else []
        return chat_messages(events), grade_panel(events), status_line(view)

    def drive(
        self, session_id: str, message: str | AudioAnswer, shown: str = ""
    ) -> Iterator[tuple[Any, ...]]:
        """Send a message and yield (chat, grade, status) as events arrive, LLM tokens included."""
        view = self.view(session_id)
        if view is None:
            raise BadInput("No session in this tab: press Start.")
        events: list[Event] = list(view.events)
        grade, status = grade_panel(events), status_line(view).rsplit(" · ", 1)[0] + " · working…"
        waiting = [{"role": "user", "content": shown}] if shown else []
        yield [*chat_messages(events), *waiting], grade, status
        streaming = ""
        for event in self.manager.stream(session_id, message):
            if event.type == "token":
                streaming += event.text
                yield chat_messages(events, streaming), grade, status
                continue
            if event.type in PROMPT_TYPES:
                streaming = ""
            events.append(event)
            yield chat_messages(events, streaming), grade_panel(events), status
        yield self.panels(self.view(session_id))

    def prompt_terms(self, view: SessionView) -> list[str]:
        return question_terms(self.manager.services.bank.get(view.question_id or ""))

    # -- UI events ---------------------------------------------------------

    def on_load(self, stored: str) -> tuple[Any, ...]:
        """A (re)loaded tab: resume the session its sessionStorage names, if any."""
        session_id = stored or ""
        if session_id:
            try:
                session_id, _ = self.manager.resume(session_id)
            except InterviewerError:
                session_id = ""
        view = self.view(session_id)
        return (
            session_id if view else "",
            *self.panels(view),
            gr.Accordion(open=view is None or view.finished),
        )

    def on_start(
        self,
        topics: list[str],
        difficulty: str,
        source: str,
        questions: float,
        mode: str,
        backend: str,
        progress: gr.Progress = PROGRESS,
    ) -> tuple[Any, ...]:
        try:
            self.wait_ready(progress, to_start=True)
            progress(None, desc="Planning the session…")
            session_id, _ = self.manager.start(
                self._options(topics, difficulty, source, questions, mode, backend)
            )
        except InterviewerError as exc:
            raise gr.Error(redact(str(exc), self.settings)) from exc
        return (
            session_id,
            session_id,
            *self.panels(self.view(session_id)),
            gr.Accordion(open=False),
            "",
            "",
            "",
        )

    def on_send(self, session_id: str, text: str, voice_on: bool = False) -> Iterator[tuple[Any, ...]]:
        """Send a typed answer; in a voice interview its reply starts being said at once."""
        if not text.strip():
            gr.Warning("Type an answer first (or a command: /hint, /answer, /skip, /repeat, /end).")
            yield gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return
        try:

            def over() -> None:
                if voice_on:
                    self.say_ahead(session_id)

            for chat, grade, status in before_last(self.drive(session_id, text, shown=text), over):
                yield chat, grade, status, ""
        except InterviewerError as exc:
            _warn(exc, self.settings)
            yield *self.panels(self.view(session_id)), text  # the answer stays in the box

    def on_command(self, session_id: str, command: str) -> Iterator[tuple[Any, ...]]:
        view = self.view(session_id)
        if command == "/end" and view is not None and view.finished:  # already over: just the report
            yield self.panels(view)
            return
        try:
            yield from self.drive(session_id, command)
        except InterviewerError as exc:
            _warn(exc, self.settings)
            yield self.panels(self.view(session_id))

    def on_audio(
        self, session_id: str, path: str | None, progress: gr.Progress = PROGRESS
    ) -> tuple[Any, ...]:
        """Transcribe a recording or upload into the editable transcript (nothing is sent yet)."""
        if not path:
            return gr.skip(), gr.skip(), gr.skip()
        try:
            progress(None, desc="Transcribing… (the first recording also loads the speech model)")
            started = time.perf_counter()
            draft_id, heard = self.transcribe(session_id, path)
            log.debug("transcribed a recording in %.2f s", time.perf_counter() - started)
        except InterviewerError as exc:
            self._transcribed.pop(session_id, None)
            _warn(exc, self.settings)  # whatever was typed or transcribed before stays
            return gr.skip(), gr.skip(), gr.skip()
        self._transcribed[session_id] = (draft_id, heard.text)
        return heard.text, draft_figures(heard.delivery), draft_id

    def on_send_spoken(
        self, session_id: str, text: str, draft_id: str, recording: str | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """Send the reviewed transcript. A recording that was never transcribed (the connection
        dropped as it ended) is transcribed now and sent as heard."""
        try:
            if not draft_id and recording:
                if recording in self._heard:  # heard already, and nothing came of it
                    raise BadInput("Nothing to send: no answer was heard in that recording. "
                                   "Record it again, or type your answer.")  # fmt: skip
                draft_id, heard = self.transcribe(session_id, recording)
                text = heard.text
            if not draft_id:
                raise BadInput("Record or upload an answer first; typed answers go in the answer box.")
            path = self.speech.confirm(draft_id, text)
            for chat, grade, status in self.drive(session_id, AudioAnswer(path)):
                yield chat, grade, status, "", "", "", None
        except InterviewerError as exc:
            _warn(exc, self.settings)
            yield *self.panels(self.view(session_id)), gr.skip(), gr.skip(), gr.skip(), gr.skip()

    def on_hands_free(
        self, session_id: str, text: str, draft_id: str, voice_on: bool, review: bool
    ) -> Iterator[tuple[Any, ...]]:
        """In a voice interview, a transcribed recording is sent at once (unless the candidate
        asked to review transcripts): no click between the end of the answer and the next
        question. Otherwise nothing happens and the transcript waits for "Send"."""
        if not hands_free(voice_on, review, draft_id, text):
            yield tuple(gr.skip() for _ in range(7))
            return
        turn = self._hands_free_turn(draft_id)
        before = self.view(session_id)
        started = time.perf_counter()

        def over() -> None:
            after = self.view(session_id)
            turn.sent = after is not None and len(after.events) > (len(before.events) if before else 0)
            if turn.sent:  # its line starts being said before the page has even shown the turn
                self.say_ahead(session_id)
            log.debug("graded a spoken answer in %.2f s", time.perf_counter() - started)
            turn.done.set()

        try:
            yield from before_last(self.on_send_spoken(session_id, text, draft_id), over)
        finally:
            turn.done.set()  # whatever happened, the voice waiting for this turn stops waiting

    def on_voice_heard(
        self, session_id: str, voice_on: bool, review: bool, draft_id: str, text: str
    ) -> Iterator[Any]:
        """The voice of a turn sent hands-free. It starts with the sending, not after it (a
        page round trip, about 0.25 s), waits for the grade, then says the line as `on_voice`
        does. Nothing is said when the recording was not sent. The page reads this handler's
        inputs as it starts it, which under load can be after the sending has cleared the draft:
        an empty draft is then the session's last transcription."""
        if not draft_id and session_id in self._transcribed:
            draft_id, text = self._transcribed[session_id]
            log.debug(
                "voice of a recording: the page's draft was empty; the last transcription is %s", draft_id
            )
        if not hands_free(voice_on, review, draft_id, text):
            log.debug(
                "voice of a recording: not a hands-free turn (draft %r, %d characters)", draft_id, len(text)
            )
            yield gr.skip()
            return
        turn = self._hands_free_turn(draft_id)
        over = turn.done.wait(HANDS_FREE_WAIT_S)
        with self._hands_free_lock:
            self._hands_free.pop(draft_id, None)
        if self._transcribed.get(session_id, ("",))[0] == draft_id:
            self._transcribed.pop(session_id, None)  # its voice is said (or not): no fallback for the next
        log.debug("voice of recording %s: turn over %s, sent %s", draft_id, over, turn.sent)
        if not (over and turn.sent):
            yield gr.skip()
            return
        yield from self.on_voice(session_id, True)

    def _hands_free_turn(self, draft_id: str) -> HandsFreeTurn:
        with self._hands_free_lock:
            return self._hands_free.setdefault(draft_id, HandsFreeTurn())

    def on_voice(self, session_id: str, voice_on: bool) -> Iterator[Any]:
        """In a voice interview, the interviewer's words since the last answer (its reaction,
        then the next question or follow-up), streamed to a player that starts by itself: the
        first sentence as soon as it is synthesized, then the rest. When no voice can speak, a
        notice says the voice is off; the text is on screen all along."""
        view = self.view(session_id) if voice_on else None
        parts = spoken_parts(spoken_line(view.events)) if view is not None else []
        if view is None or not parts:
            yield gr.skip()
            return
        try:
            voice, folder = self._voice_and_folder()
            line = f"{session_id}-{len(view.events)}-"
            for old in folder.glob(f"{session_id}-*.wav"):  # the page has its own copy
                if not old.name.startswith(line):
                    old.unlink(missing_ok=True)
            for n, part in enumerate(parts):
                out = folder / f"{line}{n}.wav"
                ahead = self._said_ahead.pop(out, None)
                if ahead is not None:
                    ahead.result()  # raises what speaking raised
                else:
                    speak(part, out, voice)
                log.debug("voice: part %d of %d of line %s out", n + 1, len(parts), out.name)
                yield str(out)
        except InterviewerError as exc:
            if session_id in self._voice_off:  # said once per session; the text goes on
                log.info("voice still off for session %s: %s", session_id, exc)
            else:
                self._voice_off.add(session_id)
                _warn(InterviewerError(f"The interviewer's voice is off: {exc}"), self.settings)
            yield None

    def _voice_and_folder(self) -> tuple[Voice, Path]:
        if self._voice is None:
            self._voice = voice_for(self.settings.voice)
        if self._voice_dir is None:
            self._voice_dir = Path(tempfile.mkdtemp(prefix="interviewer-voice-"))
        return self._voice, self._voice_dir

    def say_ahead(self, session_id: str) -> None:
        """Start synthesizing the first part of the session's next spoken line in the background,
        so that `on_voice` finds it ready. Errors wait for `on_voice`, which reports them."""
        view = self.view(session_id)
        parts = spoken_parts(spoken_line(view.events)) if view is not None else []
        if view is None or not parts:
            return
        try:
            voice, folder = self._voice_and_folder()
        except InterviewerError:
            return  # on_voice says the voice is off
        out = folder / f"{session_id}-{len(view.events)}-0.wav"
        for stale in [p for p in self._said_ahead if p.name.startswith(f"{session_id}-")]:
            self._said_ahead.pop(stale, None)
        self._said_ahead[out] = self._saying.submit(speak, parts[0], out, voice)

    def on_report(self, session_id: str, scope: str) -> tuple[Any, ...]:
        one = scope == "This session"
        try:
            if one and self.view(session_id) is None:
                raise BadInput("No session in this tab yet: start one, or choose “All sessions”.")
            report = build_report(self.manager, session_id if one else None)
        except InterviewerError as exc:
            return (f"*{redact(str(exc), self.settings)}*", *([None] * 6))
        figures = draw_charts(report)
        stem = f"interviewer-report-{session_id if one else 'all'}"
        md, html = report_files(
            report, self.settings, Path(tempfile.mkdtemp(prefix="interviewer-")), stem, figures
        )
        plots = [figures.get(name) for name in ("mastery", "scores", "grill", "speech")]
        return (redact(to_markdown(report), self.settings), *plots, str(md), str(html))

    def on_finished(self, session_id: str, scope: str) -> tuple[Any, ...]:
        """Refresh the report once the session is over (else leave it as it is)."""
        view = self.view(session_id)
        if view is None or not view.finished:
            return tuple(gr.skip() for _ in range(7))
        return self.on_report(session_id, scope)

    # -- API endpoints (gradio_client) -------------------------------------

    def transcribe(self, session_id: str, path: str) -> tuple[str, Transcription]:
        view = self.view(session_id)
        if view is None or view.awaiting is None:
            raise BadInput("No question is waiting for an answer: start a session first.")
        self._heard.append(path)
        try:
            return self.speech.draft(path, self.prompt_terms(view))
        except BadAudio as exc:  # name the upload, not the server's copy of it
            raise BadAudio(str(exc).replace(path, Path(path).name)) from exc

    @staticmethod
    def _result(view: SessionView | None, events: list[Event]) -> dict[str, Any]:
        return {
            "session_id": view.session_id if view else "",
            "events": [e.to_json() for e in events],
            "awaiting": view.awaiting if view else None,
            "number": view.number if view else 0,
            "total": view.total if view else 0,
            "finished": view.finished if view else True,
        }

    def api_start(
        self,
        topics: list[str] | None = None,
        difficulty: str = "",
        questions: int = 3,
        mode: str = "interview",
        backend: str = "",
        source: str = "",
    ) -> dict[str, Any]:
        """Start a session. Returns {"session_id", "events", "awaiting", "number", "total", "finished"}."""
        try:
            self.wait_ready(to_start=True)
            session_id, events = self.manager.start(
                self._options(topics, difficulty, source, questions, mode, backend)
            )
        except InterviewerError as exc:
            raise gr.Error(redact(str(exc), self.settings)) from exc
        return self._result(self.view(session_id), events)

    def api_answer(self, session_id: str, text: str, draft_id: str = "") -> dict[str, Any]:
        """Send an answer or a command (/hint, /answer, /skip, /repeat, /end). With `draft_id`
        (from /transcribe), `text` is the reviewed transcript of that recording."""
        try:
            message: str | AudioAnswer = (
                AudioAnswer(self.speech.confirm(draft_id, text)) if draft_id else text
            )
            events = self.manager.send(session_id, message)
        except InterviewerError as exc:
            raise gr.Error(redact(str(exc), self.settings)) from exc
        return self._result(self.view(session_id), events)

    def api_transcribe(self, session_id: str, audio: FileData) -> dict[str, Any]:
        """Transcribe a recording for review. Returns {"draft_id", "text", "figures"}; nothing is graded
        until /answer gets the (edited) text with the draft id."""
        path = Path(audio["path"] if isinstance(audio, dict) else audio.path).resolve()
        uploads = Path(gr.utils.get_upload_folder()).resolve()
        if not path.is_relative_to(uploads):  # only files uploaded through Gradio, never a server path
            raise gr.Error("Upload the audio file with the request (gradio_client.handle_file).")
        try:
            draft_id, heard = self.transcribe(session_id, str(path))
        except InterviewerError as exc:
            raise gr.Error(redact(str(exc), self.settings)) from exc
        return {"draft_id": draft_id, "text": heard.text, "figures": heard.delivery}
