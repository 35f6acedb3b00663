"""Progress store, checkpointers and adaptive practice across sessions."""

from __future__ import annotations

import dataclasses
import socket
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from interviewer.errors import BadInput, StorageError
from interviewer.interview.checkpoint import close_checkpointer, make_checkpointer
from interviewer.interview.context import Services
from interviewer.interview.progress import ProgressStore
from interviewer.interview.session import SessionManager, SessionOptions
from interviewer.interview.state import Attempt
from interviewer.settings import load_settings

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def attempt(n: int, score: float | None = 3.0, session: str = "s1", qid: str = "004-01") -> Attempt:
    return {
        "id": f"{session}:{n}", "session_id": session, "question_id": qid, "kind": "answer",
        "mode": "interview", "target_point": None, "answer": "some answer", "grade": {"score": score},
        "score": score, "missed": ["a point"], "hints": 0, "asked_at": NOW.isoformat(),
        "answered_at": (NOW + timedelta(seconds=n)).isoformat(), "think_s": 12.5, "grade_ms": 80.0,
    }  # fmt: skip


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a progress store lives: the same tests run against both databases."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return tmp_path / "p.sqlite"


def test_attempts_are_stored_once_and_read_back(location: str | Path) -> None:
    store = ProgressStore(location)
    assert store.record_attempt(attempt(1))
    assert not store.record_attempt(attempt(1))  # a re-run node
    store.record_attempt(attempt(2, score=None))
    for n in range(3, 12):  # "s1:10" comes after "s1:9" when two attempts share a time
        store.record_attempt({**attempt(n), "answered_at": attempt(3)["answered_at"]})
    rows = store.attempts("s1")
    assert [r["id"] for r in rows] == [f"s1:{n}" for n in range(1, 12)]
    assert rows[0] == attempt(1)
    store.close()
    again = ProgressStore(location)  # survives reopening (and creating the schema again)
    assert again.attempts() == rows
    again.close()


def test_schedule_is_reviewed_once_per_session(location: str | Path) -> None:
    store = ProgressStore(location)
    assert store.record_review("s1", "004-01", 1.0, NOW)
    assert not store.record_review("s1", "004-01", 5.0, NOW)  # the re-run changes nothing
    history = store.history()["004-01"]
    assert history.last_score == 1.0 and history.reviews == 1 and history.due == NOW + timedelta(minutes=1)
    store.record_review("s2", "004-01", 5.0, NOW + timedelta(hours=1))
    assert store.history()["004-01"].reviews == 2
    store.close()


def test_sessions_last_unfinished_first(location: str | Path) -> None:
    store = ProgressStore(location)
    options = {"mode": "drill", "backend": "rubric"}
    store.start_session("old", options, NOW)
    store.start_session("new", options, NOW + timedelta(minutes=5))
    assert store.last_session_id() == "new"
    store.finish_session("new", NOW + timedelta(minutes=6))
    assert store.last_session_id() == "old"
    store.touch_session("old", NOW + timedelta(minutes=7))
    assert [s.id for s in store.sessions()] == ["old", "new"]
    store.finish_session("old", NOW + timedelta(minutes=8))
    assert store.last_session_id() is None
    store.close()


def test_a_postgres_database_of_a_newer_schema_is_refused(postgres_url: str) -> None:
    import psycopg

    ProgressStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StorageError, match="newer interviewer"):
        ProgressStore(postgres_url)


def test_an_unreachable_progress_database_says_what_to_do() -> None:
    pytest.importorskip("psycopg")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StorageError, match="INTERVIEWER_DATABASE_URL") as caught:
        ProgressStore(f"postgresql://someone:hunter2@127.0.0.1:{port}/x")
    assert "hunter2" not in str(caught.value)  # the password is never shown


def test_a_database_url_that_is_not_postgres_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERVIEWER_DATABASE_URL", "mysql://x@y/z")
    with pytest.raises(ValueError, match="postgresql://"):
        load_settings()


@pytest.mark.parametrize(
    "content", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\xff" * 5000]
)
def test_corrupt_progress_db_raises_storage_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "progress.sqlite"
    path.write_bytes(content)
    with pytest.raises(StorageError, match=r"cannot be read.*mv .*progress\.sqlite"):
        ProgressStore(path)
    assert path.read_bytes() == content  # left untouched, never silently emptied


def test_foreign_sqlite_db_is_not_taken_for_an_empty_history(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(StorageError, match="not an interviewer progress database"):
        ProgressStore(path)


def test_corrupt_checkpoint_db_raises_storage_error(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ensure_home()
    settings.checkpoint_path.write_bytes(b"garbage" * 500)
    with pytest.raises(StorageError, match="checkpoints"):
        make_checkpointer(settings)


def test_default_checkpointer_is_sqlite_in_the_data_dir(settings) -> None:  # type: ignore[no-untyped-def]
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = make_checkpointer(settings)
    assert isinstance(saver, SqliteSaver) and settings.checkpoint_path.exists()
    close_checkpointer(saver)


def play(
    manager: SessionManager, options: SessionOptions, weak: set[str] | None = None
) -> tuple[str, list[str]]:
    """Answer a session with reference answers; "I do not know" for `weak` (default: the first)."""
    sid, _ = manager.start(options)
    asked = []
    while manager.state(sid).awaiting:
        prompt = manager.state(sid).prompt()
        assert prompt is not None and prompt.question_id
        if prompt.type == "question":
            asked.append(prompt.question_id)
        q = manager.services.bank.get(prompt.question_id)
        weak_one = prompt.question_id in (weak or set()) or (weak is None and len(asked) == 1)
        manager.send(
            sid, "/skip" if prompt.type == "follow_up" else "I do not know." if weak_one else q.reference
        )
    return sid, asked


def test_second_session_favours_the_weakest_questions(manager: SessionManager) -> None:
    options = SessionOptions(source="004", questions=3, seed=11)
    _, first = play(manager, options)  # the first question is answered badly, the others well
    weakest, strong = first[0], first[1:]
    history = manager.services.progress.history()
    assert history[weakest].last_score == 0.0 and all(history[q].last_score >= 4.5 for q in strong)
    for seed in (12, 13, 14):
        sid, _ = manager.start(SessionOptions(source="004", questions=3, seed=seed))
        plan = [e.question_id for e in manager.state(sid).events if e.type == "question"]
        assert plan[0] == weakest
        manager.send(sid, "/end")
    _, second = play(manager, SessionOptions(source="004", questions=3, seed=15), weak=set())
    assert second[0] == weakest and not set(strong) & set(second)


def test_resume_from_sqlite_in_a_new_manager(settings, shared_store) -> None:  # type: ignore[no-untyped-def]
    first = SessionManager(settings, services=Services(settings, store=shared_store))
    sid, events = first.start(SessionOptions(source="004", questions=2, seed=5))
    question = events[-1]
    first.close()
    second = SessionManager(settings, services=Services(settings, store=shared_store))
    resumed_id, events = second.resume("last")
    assert resumed_id == sid and [e.to_json() for e in events] == [question.to_json()]
    assert second.state(sid).awaiting == "question"
    with pytest.raises(BadInput, match="No session 'nope'"):
        second.resume("nope")
    second.close()


def test_resume_shows_the_turns_saved_prompt_or_says_why_it_cannot(
    settings, shared_store, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    first = SessionManager(settings, services=Services(settings, store=shared_store))
    sid, events = first.start(SessionOptions(source="004", questions=2, seed=5))
    question = events[-1]
    first.close()
    second = SessionManager(settings, services=Services(settings, store=shared_store))
    saved = second.state

    # The event list lacks the prompt: the prompt saved with the turn is shown, never nothing.
    def without_prompts(session_id: str) -> Any:
        view = saved(session_id)
        return dataclasses.replace(view, events=[e for e in view.events if e.type != "question"])

    monkeypatch.setattr(second, "state", without_prompts)
    assert [e.to_json() for e in second.resume(sid)[1]] == [question.to_json()]

    # Neither waiting nor finished: an error that says so, not a terminal waiting in silence.
    monkeypatch.setattr(
        second, "state", lambda session_id: dataclasses.replace(saved(session_id), awaiting=None)
    )
    with pytest.raises(StorageError, match=f"Session {sid} could not be resumed"):
        second.resume(sid)
    second.close()


class Crash(Exception):
    """Stands in for a kill: the step dies before LangGraph saves it."""


class CrashingProgress(ProgressStore):
    def record_attempt(self, attempt: Attempt) -> bool:
        super().record_attempt(attempt)
        raise Crash  # written, but the step that wrote it is never checkpointed


class CrashingStore:
    def __init__(self, store: Any) -> None:
        self.store = store

    def passages_for(self, *args: Any, **kwargs: Any) -> Any:
        raise Crash

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("where", ["record", "follow_up"])
def test_a_step_cut_short_reruns_on_resume_and_records_once(settings, shared_store, where) -> None:  # type: ignore[no-untyped-def]
    progress = CrashingProgress(settings.progress_path) if where == "record" else None
    store = CrashingStore(shared_store) if where == "follow_up" else shared_store
    one = SessionManager(settings, services=Services(settings, store=store, progress=progress))
    sid, events = one.start(SessionOptions(source="004", questions=2, seed=5))
    q = one.services.bank.get(events[-1].question_id or "")
    weak = next((kp.text for kp in q.key_points if not kp.core), q.key_points[0].text)
    with pytest.raises(Crash):
        one.send(sid, weak)
    # A new process (new checkpointer connection, new services) picks the session up.
    two = SessionManager(settings, services=Services(settings, store=shared_store))
    _, events = two.resume("last")
    assert [e.type for e in events] == ["follow_up"]
    attempts = two.services.progress.attempts(sid)
    assert [(a["kind"], a["answer"]) for a in attempts] == [("answer", weak)]
    assert [e.type for e in two.state(sid).events].count("grade") == 1
    two.close()


def crash_before_checkpoint(saver: Any, channel: str) -> None:
    """From now on the saver is killed after it saves the writes of a step that writes `channel`
    (await_answer writes "pending", grade "attempt_count"), before it saves that step's checkpoint."""
    put_writes, put = saver.put_writes, saver.put
    wrote = []

    def writes_then_note(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        put_writes(config, writes, task_id, task_path)
        wrote.extend(ch for ch, _ in writes if ch == channel)

    def put_unless_wrote(*args: Any) -> Any:
        if wrote:
            raise Crash
        return put(*args)

    saver.put_writes, saver.put = writes_then_note, put_unless_wrote


@pytest.mark.parametrize("channel", ["pending", "attempt_count"])
def test_a_kill_between_a_steps_writes_and_its_checkpoint_resumes(settings, shared_store, channel) -> None:  # type: ignore[no-untyped-def]
    # LangGraph's snapshot.next leaves out a task whose writes are saved: such a session once
    # looked finished, and `practice --resume` waited in silence (CI, after a SIGKILL).
    saver = make_checkpointer(settings)
    one = SessionManager(settings, services=Services(settings, store=shared_store), checkpointer=saver)
    sid, events = one.start(SessionOptions(source="004", questions=2, seed=5))
    q = one.services.bank.get(events[-1].question_id or "")
    weak = next((kp.text for kp in q.key_points if not kp.core), q.key_points[0].text)
    crash_before_checkpoint(saver, channel)
    with pytest.raises(Crash):
        one.send(sid, weak)
    close_checkpointer(saver)
    two = SessionManager(settings, services=Services(settings, store=shared_store))
    assert not two.state(sid).finished
    with pytest.raises(BadInput, match=f"stopped in the middle of a step.*--resume {sid}"):
        two.send(sid, "an answer typed before resuming")  # not sent, not lost in silence
    _, events = two.resume("last")
    assert [e.type for e in events][-1] == "follow_up"
    assert [e.type for e in two.state(sid).events].count("grade") == 1
    assert [(a["kind"], a["answer"]) for a in two.services.progress.attempts(sid)] == [("answer", weak)]
    two.close()


# ---------------------------------------------------------------- Postgres


@pytest.mark.slow
def test_postgres_checkpointer_shares_sessions_between_instances(  # type: ignore[no-untyped-def]
    settings, shared_store, postgres_url
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    shared = load_settings(home=settings.home, checkpoint_url=postgres_url)
    one = SessionManager(shared, services=Services(shared, store=shared_store))
    sid, events = one.start(SessionOptions(source="004", questions=2, seed=5))
    assert isinstance(one._checkpointer, PostgresSaver)
    q = one.services.bank.get(events[-1].question_id or "")
    one.send(sid, q.reference)
    # A second app instance (its own pool) picks the session up where the first left it.
    two = SessionManager(shared, services=Services(shared, store=shared_store))
    view = two.state(sid)
    assert view.awaiting == "question" and view.number == 2
    assert [e.type for e in two.send(sid, "/end")] == ["summary"]
    one.close()
    two.close()


def test_unreachable_postgres_says_what_to_do(settings) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("langgraph.checkpoint.postgres")
    from interviewer.errors import BackendUnavailable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bad = load_settings(home=settings.home, checkpoint_url=f"postgresql://nobody@127.0.0.1:{port}/x")
    with pytest.raises(BackendUnavailable, match="INTERVIEWER_CHECKPOINT_URL"):
        make_checkpointer(bad)


def test_in_memory_manager_needs_no_files(settings, services) -> None:  # type: ignore[no-untyped-def]
    manager = SessionManager(settings, services=services, checkpointer=InMemorySaver())
    manager.start(SessionOptions(source="004", questions=1, seed=1))
    assert not settings.checkpoint_path.exists()
