"""The interview API the terminal and the web app share.

    manager = SessionManager(load_settings())
    session_id, events = manager.start(SessionOptions(topics=("precision",), questions=2))
    [e.type for e in events]                                  # ['question']
    [e.type for e in manager.send(session_id, "BF16 keeps FP32's exponent range...")]
                                                              # ['answer', 'grade', 'follow_up']
    [e.type for e in manager.send(session_id, "/skip")]       # ['skip', 'question']

A message is an answer's text, a command (`/skip`, `/hint`, `/answer`,
`/repeat`, `/end`) or an `AudioAnswer`. Each session is one LangGraph thread,
saved by the checkpointer after every step, so `resume(session_id)` (or
`resume("last")`) continues a session another process started or a crash cut
short. One `SessionManager` serves many sessions from many threads: heavy
objects live in the shared `Services`, and each session has its own lock.

This module does no printing (terminal.py) and no grading (graph.py asks the grader).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Command

from interviewer.errors import BadInput, StorageError, UnknownBackend
from interviewer.grading import GRADERS
from interviewer.interview.checkpoint import close_checkpointer, make_checkpointer
from interviewer.interview.context import Context, Services
from interviewer.interview.graph import compile_graph
from interviewer.interview.state import (
    COMMANDS,
    PROMPT_TYPES,
    Event,
    Mode,
    NoticeEvent,
    Options,
    State,
    TokenEvent,
    UserInput,
    event_from_json,
)
from interviewer.models.embeddings import serving
from interviewer.settings import Settings

log = logging.getLogger(__name__)

MAX_QUESTIONS = 50
HELP = "Commands: /skip, /hint, /answer (show the model answer), /repeat, /end."


@dataclass(frozen=True)
class SessionOptions:
    topics: tuple[str, ...] = ()
    difficulty: str | None = None  # "easy" | "medium" | "hard"
    source: str | None = None  # a document id: "000", "002", ...
    questions: int = 3
    mode: Mode = "interview"  # "drill": cold answers, no follow-ups
    backend: str | None = None  # None: settings.backend
    seed: int | None = None  # None: derived from the session id


@dataclass(frozen=True)
class AudioAnswer:
    """A recorded answer (WAV, MP3, M4A, WebM or OGG), transcribed in the graph."""

    path: str


@dataclass(frozen=True)
class SessionView:
    """Where a session stands: its events so far and what it waits for."""

    session_id: str
    finished: bool
    awaiting: str | None  # "question" | "follow_up" while waiting for the candidate, else None
    question_id: str | None
    number: int  # 1-based position of the current question (0 before the first)
    total: int
    options: dict[str, Any]
    events: list[Event] = field(default_factory=list)
    saved_prompt: dict[str, Any] | None = None  # the prompt as saved with the turn awaiting an answer

    def prompt(self) -> Event | None:
        """The question or follow-up the candidate is answering (as last shown, else as saved
        with the turn)."""
        if self.awaiting is None:
            return None
        shown = next((e for e in reversed(self.events) if e.type in PROMPT_TYPES), None)
        return shown or (event_from_json(self.saved_prompt) if self.saved_prompt else None)


def _pending(snapshot: Any) -> tuple[str, ...]:
    """The steps a saved session has still to run, a step cut short by a kill included.

    LangGraph's `snapshot.next` leaves out a task whose writes were saved before the kill
    stopped the step's checkpoint, so a session killed there looked finished; its tasks
    still list it.
    """
    return tuple(task.name for task in snapshot.tasks)


def parse_message(message: str | AudioAnswer) -> UserInput | str:
    """The graph input for a message, or a problem to show (unknown command).

    >>> parse_message("/hint"), parse_message("  Warm up first.\\n")
    ({'kind': 'hint'}, {'kind': 'answer', 'text': 'Warm up first.'})
    """
    if isinstance(message, AudioAnswer):
        return {"kind": "audio", "path": str(message.path)}
    text = message.strip()
    if text.startswith("/") and " " not in text:
        kind = COMMANDS.get(text.lower())
        return {"kind": kind} if kind else f"Unknown command {text!r}. {HELP}"
    return {"kind": "answer", "text": text}


class SessionManager:
    """Start, drive and resume interview sessions (thread-safe)."""

    def __init__(
        self, settings: Settings, *, services: Services | None = None, checkpointer: Any | None = None
    ) -> None:
        self.settings = settings
        self.services = services or Services(settings)
        self._owns_checkpointer = checkpointer is None
        self._checkpointer = checkpointer
        self._graph: Any = None
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @property
    def graph(self) -> Any:
        with self._guard:
            if self._graph is None:
                if self._checkpointer is None:
                    self._checkpointer = make_checkpointer(self.settings)
                self._graph = compile_graph(self._checkpointer)
            return self._graph

    def close(self) -> None:
        with self._guard:
            if self._owns_checkpointer and self._checkpointer is not None:
                close_checkpointer(self._checkpointer)
                self._checkpointer = self._graph = None

    def ensure_index(self) -> bool:
        """Build the vector index if it is empty (first run: ~30 s). True when it was built."""
        store = self.services.store
        if store.count() > 0:
            return False
        store.ensure_index(self.services.bank)
        return True

    # -- the API ----------------------------------------------------------

    def start(self, options: SessionOptions) -> tuple[str, list[Event]]:
        """A new session: its id and first events (notices, then the first question)."""
        checked = self.check(options)
        session_id = uuid.uuid4().hex[:12]
        if options.seed is None:
            checked["seed"] = int(session_id, 16) % 2**32
        self.services.grader(checked["backend"])  # a missing key or server fails here, not mid-session
        self.ensure_index()
        self.services.progress.start_session(session_id, dict(checked), self.services.now())
        initial = State(session_id=session_id, options=checked)
        events = self._collect(self._run(session_id, initial))
        self._prefetch(checked["backend"], events)
        return session_id, events

    def send(self, session_id: str, message: str | AudioAnswer) -> list[Event]:
        """The events that follow the candidate's message (grade, follow-up, next question, ...)."""
        return self._collect(self.stream(session_id, message))

    def stream(self, session_id: str, message: str | AudioAnswer) -> Iterator[Event]:
        """Like `send`, but yields each event as soon as it exists, LLM tokens included."""
        with serving():
            yield from self._stream(session_id, message)

    def _stream(self, session_id: str, message: str | AudioAnswer) -> Iterator[Event]:
        parsed = parse_message(message)
        if isinstance(parsed, str):
            yield NoticeEvent(session_id, None, parsed)
            return
        view = self.state(session_id)
        if view.awaiting is None:
            raise BadInput(
                f"Session {session_id} is finished." if view.finished else
                f"Session {session_id} stopped in the middle of a step, so this message was not sent. "
                f"Reload the page, or run `interviewer practice --resume {session_id}`, to pick it up."
            )  # fmt: skip
        parsed["at"] = self.services.now().isoformat()
        self.services.progress.touch_session(session_id, self.services.now())
        shown = []
        for event in self._run(session_id, Command(resume=parsed)):
            shown.append(event)
            yield event
        self._prefetch(view.options.get("backend", self.settings.backend), shown)

    def state(self, session_id: str) -> SessionView:
        snapshot = self.graph.get_state(self._config(session_id))
        values = snapshot.values or {}
        if not values:
            raise BadInput(f"No session {session_id!r}. Start one with `interviewer practice`.")
        turn = values.get("turn")
        waiting = bool(snapshot.interrupts) and turn is not None
        return SessionView(
            session_id=session_id,
            finished=not _pending(snapshot),
            awaiting=turn["prompt"].get("type") if waiting and turn else None,
            question_id=turn["question_id"] if turn else None,
            number=turn["number"] if turn else 0,
            total=len(values.get("plan", [])),
            options=dict(values.get("options") or {}),
            events=[event_from_json(e) for e in values.get("events", [])],
            saved_prompt=turn["prompt"] if waiting and turn else None,
        )

    def resume(self, session_id: str = "last") -> tuple[str, list[Event]]:
        """Continue a session: finish a step a crash cut short, then show the pending prompt.

        `"last"` is the most recently active unfinished session. A finished
        session returns its summary.
        """
        if session_id == "last":
            found = self.services.progress.last_session_id()
            if found is None:
                raise BadInput("No unfinished session to resume. Start one with `interviewer practice`.")
            session_id = found
        snapshot = self.graph.get_state(self._config(session_id))
        if not snapshot.values:
            where = self._where()
            raise BadInput(f"No session {session_id!r} in {where}. Use `--resume last` for the latest.")
        events: list[Event] = []
        for _ in range(3):  # a kill can leave a step half done: finish it (and the next, if any)
            if not (_pending(snapshot) and not snapshot.interrupts):
                break
            events += self._collect(self._run(session_id, None))
            snapshot = self.graph.get_state(self._config(session_id))
        view = self.state(session_id)
        if not view.finished and view.awaiting is None:
            raise StorageError(
                f"Session {session_id} could not be resumed: its last saved step is neither waiting "
                f"for an answer nor finished (next: {', '.join(_pending(snapshot)) or 'nothing'}). "
                "Start a new session; its answers so far are kept in the progress report."
            )
        if not any(e.type in (*PROMPT_TYPES, "summary") for e in events):
            last = view.prompt() if not view.finished else next(
                (e for e in reversed(view.events) if e.type == "summary"), None
            )  # fmt: skip
            if last is not None:
                events.append(last)
        return session_id, events

    # -- internals --------------------------------------------------------

    def _prefetch(self, backend: str, events: list[Event]) -> None:
        """Embed the rubric of each question just asked, in the background while the candidate reads.

        Only a speed-up: a question's first grade otherwise embeds its rubric (about a third
        of that turn, see `interviewer bench`). Anything that fails here fails again, with
        its message, at the grade.
        """
        asked = [e.question_id for e in events if e.type == "question" and e.question_id]
        prime = getattr(self.services.grader(backend), "prime", None) if asked else None
        if prime is None:
            return
        questions = [self.services.bank.get(qid) for qid in asked]

        def run() -> None:
            try:
                prime(questions)
            except Exception:  # only a speed-up: the grade embeds what it lacks, and fails visibly
                log.warning("prefetching the rubric vectors of %s failed", asked, exc_info=True)

        # Not a daemon: killing it inside torch at exit aborts the process; it ends within seconds.
        threading.Thread(target=run, name="interviewer-prefetch").start()

    def _where(self) -> str:
        url = self.settings.database_url or self.settings.checkpoint_url
        return "the Postgres checkpoints" if url else str(self.settings.checkpoint_path)

    @staticmethod
    def _config(session_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": session_id}}

    def _lock(self, session_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(session_id, threading.Lock())

    def _run(self, session_id: str, payload: Any) -> Iterator[Event]:
        """Run the graph until it waits for the candidate or ends, yielding events as nodes finish."""
        with self._lock(session_id):
            chunks = self.graph.stream(
                payload,
                self._config(session_id),
                context=Context(self.services),
                stream_mode=["custom", "updates"],
                durability="sync",  # each step is saved before the next starts: a kill loses nothing
            )
            for mode, chunk in chunks:
                if mode == "custom":
                    yield event_from_json(chunk)
                    continue
                for node, update in chunk.items():
                    if node != "__interrupt__" and update:
                        yield from (event_from_json(e) for e in update.get("events", []))

    @staticmethod
    def _collect(events: Iterator[Event]) -> list[Event]:
        return [e for e in events if not isinstance(e, TokenEvent)]

    def check(self, options: SessionOptions) -> Options:
        """Options as the graph stores them; BadInput with the valid values otherwise.

        `start` checks too; a caller checks first to fail before slow work (the first index).
        """
        bank = self.services.bank
        bank.check_filter(list(options.topics), options.source)
        if options.difficulty not in (None, "easy", "medium", "hard"):
            raise BadInput(f"Unknown difficulty {options.difficulty!r}; use easy, medium or hard.")
        if options.mode not in ("drill", "interview"):
            raise BadInput(f"Unknown mode {options.mode!r}; use drill or interview.")
        if not 1 <= options.questions <= MAX_QUESTIONS:
            raise BadInput(f"--questions must be between 1 and {MAX_QUESTIONS}.")
        backend = options.backend or self.settings.backend
        if backend not in GRADERS:
            raise UnknownBackend(f"Unknown backend {backend!r}. Valid: {', '.join(GRADERS)}.")
        if not bank.filter(list(options.topics) or None, options.difficulty, options.source):
            raise BadInput(
                "No question matches these options. List questions with "
                "`interviewer questions --topic T --source S`, or widen the options."
            )
        return {
            "topics": list(options.topics),
            "difficulty": options.difficulty,
            "source": options.source,
            "questions": options.questions,
            "mode": options.mode,
            "backend": backend,
            "seed": options.seed or 0,
            "max_follow_ups": max(0, self.settings.max_follow_ups),
        }
