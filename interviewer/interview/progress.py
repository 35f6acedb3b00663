"""The progress store: every attempt, every session, and one fsrs card per question.

SQLite at `settings.progress_path` by default; Postgres when `INTERVIEWER_DATABASE_URL`
is a `postgresql://` URL, so that a cohort's app instances share one history. The same
SQL serves both through one seam (`_Dialect`: placeholders, the schema-version record,
the driver's errors). The schema is created, and its version recorded, on open.

Writes are idempotent (attempts by their id, schedule reviews by (session, question)),
so a graph node that re-runs after a crash records nothing twice. A database that
cannot be read or reached raises `StorageError` saying what to do; it is never
replaced by an empty history.

This module does not decide what to ask (policy.py) or render reports.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fsrs import Card

from interviewer.errors import StorageError
from interviewer.interview.policy import History, review
from interviewer.interview.state import Attempt
from interviewer.logs import mask_secrets

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    finished_at TEXT,
    mode TEXT NOT NULL,
    backend TEXT NOT NULL,
    options TEXT NOT NULL              -- JSON: topics, difficulty, source, questions, seed
);
CREATE TABLE IF NOT EXISTS attempts (
    id TEXT PRIMARY KEY,               -- "<session id>:<n>"
    session_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    kind TEXT NOT NULL,                -- answer | follow_up | skip | reveal
    mode TEXT NOT NULL,
    target_point TEXT,
    answer TEXT NOT NULL,
    grade TEXT,                        -- JSON of the Grade, NULL for skip/reveal
    score DOUBLE PRECISION,
    missed TEXT NOT NULL,              -- JSON list of key point texts
    hints INTEGER NOT NULL,
    asked_at TEXT NOT NULL,
    answered_at TEXT NOT NULL,
    think_s DOUBLE PRECISION,
    grade_ms DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS attempts_session ON attempts (session_id);
CREATE TABLE IF NOT EXISTS reviews (
    session_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    reviewed_at TEXT NOT NULL,
    PRIMARY KEY (session_id, question_id)
);
CREATE TABLE IF NOT EXISTS cards (
    question_id TEXT PRIMARY KEY,
    card TEXT NOT NULL,                -- fsrs Card.to_json()
    last_score DOUBLE PRECISION NOT NULL,
    reviews INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
"""
TABLES = {"sessions", "attempts", "reviews", "cards"}


@dataclass(frozen=True)
class SessionRecord:
    id: str
    started_at: str
    updated_at: str
    finished_at: str | None
    mode: str
    backend: str
    options: dict[str, Any]


def _unreadable(where: str, problem: object) -> StorageError:
    if where.startswith("postgres"):
        return StorageError(
            f"The progress database {mask_secrets(where)} cannot be used ({problem}). Check "
            "INTERVIEWER_DATABASE_URL and that the server is running, or unset it to use SQLite "
            "in the data directory."
        )
    return StorageError(
        f"The progress database {where} cannot be read ({problem}). It was left untouched: "
        f"move it aside (`mv {where} {where}.bad`) to start a fresh history, or restore it from a backup."
    )


@dataclass(frozen=True)
class _Dialect:
    """What differs between the two databases; everything else is the same SQL."""

    name: str  # "sqlite" | "postgres"
    placeholder: str  # "?" | "%s"
    errors: tuple[type[Exception], ...]  # the driver's errors, reported as StorageError

    def sql(self, query: str) -> str:
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)


class ProgressStore:
    """Thread-safe: one connection, one lock (sessions run concurrently in the app).

    `location` is a SQLite file path or a `postgresql://` URL."""

    def __init__(self, location: Path | str) -> None:
        self.where = str(location)
        self.path = Path(location) if not self.where.startswith("postgres") else None
        self._lock = threading.RLock()
        self._dialect, self._conn = (
            self._open_postgres() if self.path is None else self._open_sqlite(self.path)
        )

    def _open_sqlite(self, path: Path) -> tuple[_Dialect, Any]:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists() and path.stat().st_size > 0
        try:
            conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
            if existed:
                check = conn.execute("PRAGMA quick_check").fetchone()[0]
                if check != "ok":
                    raise _unreadable(self.where, f"integrity check: {check}")
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if version == 0 or not tables >= TABLES:
                    raise _unreadable(self.where, "not an interviewer progress database")
                if version > SCHEMA_VERSION:
                    raise _unreadable(self.where, f"written by a newer interviewer (schema {version})")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # as the checkpoints: safe if the process dies
            conn.executescript(SCHEMA)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.commit()
        except sqlite3.DatabaseError as exc:
            raise _unreadable(self.where, exc) from exc
        return _Dialect("sqlite", "?", (sqlite3.DatabaseError,)), conn

    def _open_postgres(self) -> tuple[_Dialect, Any]:
        try:
            import psycopg
        except ImportError as exc:
            raise StorageError(
                "INTERVIEWER_DATABASE_URL is a Postgres URL but the driver is not installed: "
                "`pip install 'interviewer[postgres]'`, or unset it to use SQLite."
            ) from exc
        try:
            conn = psycopg.connect(self.where, connect_timeout=5)
        except psycopg.OperationalError as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0]
            raise _unreadable(self.where, f"unreachable: {first_line}") from exc
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(72061)")  # two instances starting at once
                conn.execute(SCHEMA)
                conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
                version = row[0] if row else None
                if version is None:
                    conn.execute("INSERT INTO schema_version VALUES (%s)", (SCHEMA_VERSION,))
                elif version > SCHEMA_VERSION:
                    raise _unreadable(self.where, f"written by a newer interviewer (schema {version})")
        except psycopg.Error as exc:
            conn.close()
            raise _unreadable(self.where, exc) from exc
        return _Dialect("postgres", "%s", (psycopg.Error,)), conn

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """A transaction: commits on success, rolls back and reports on a database error."""
        with self._lock:
            try:
                yield self
                self._conn.commit()
            except self._dialect.errors as exc:
                self._conn.rollback()
                raise _unreadable(self.where, exc) from exc
            except BaseException:
                self._conn.rollback()
                raise

    def execute(self, query: str, args: tuple[Any, ...] = ()) -> Any:
        """Run one statement written with `?` placeholders (inside `_tx`)."""
        return self._conn.execute(self._dialect.sql(query), args)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- sessions ---------------------------------------------------------

    def start_session(self, session_id: str, options: dict[str, Any], at: datetime) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, NULL, ?, ?, ?) ON CONFLICT DO NOTHING",
                (session_id, at.isoformat(), at.isoformat(), options["mode"], options["backend"],
                 json.dumps(options)),
            )  # fmt: skip

    def touch_session(self, session_id: str, at: datetime) -> None:
        with self._tx() as conn:
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (at.isoformat(), session_id))

    def finish_session(self, session_id: str, at: datetime) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE sessions SET finished_at = COALESCE(finished_at, ?), updated_at = ? WHERE id = ?",
                (at.isoformat(), at.isoformat(), session_id),
            )

    def sessions(self) -> list[SessionRecord]:
        """All sessions, most recently active first."""
        columns = "id, started_at, updated_at, finished_at, mode, backend, options"
        with self._tx() as conn:
            rows = conn.execute(
                f"SELECT {columns} FROM sessions ORDER BY updated_at DESC, started_at DESC"
            ).fetchall()
        return [SessionRecord(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]

    def last_session_id(self, *, unfinished: bool = True) -> str | None:
        for record in self.sessions():
            if not unfinished or record.finished_at is None:
                return record.id
        return None

    # -- attempts ---------------------------------------------------------

    def record_attempt(self, attempt: Attempt) -> bool:
        """Store one attempt; False when it was already stored (a re-run node)."""
        a = attempt
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (a["id"], a["session_id"], a["question_id"], a["kind"], a["mode"], a["target_point"],
                 a["answer"], json.dumps(a["grade"]) if a["grade"] is not None else None, a["score"],
                 json.dumps(a["missed"]), a["hints"], a["asked_at"], a["answered_at"], a["think_s"],
                 a["grade_ms"]),
            )  # fmt: skip
        return cur.rowcount == 1

    def attempts(self, session_id: str | None = None) -> list[Attempt]:
        """Attempts in the order they were made (all sessions, or one)."""
        query = "SELECT * FROM attempts"
        args: tuple[str, ...] = ()
        if session_id is not None:
            query, args = query + " WHERE session_id = ?", (session_id,)
        with self._tx() as conn:
            # ids are "<session>:<n>": by length, then text, is by n within a session
            rows = conn.execute(query + " ORDER BY answered_at, session_id, length(id), id", args).fetchall()
        keys = list(Attempt.__annotations__)
        out: list[Attempt] = []
        for row in rows:
            values = dict(zip(keys, row, strict=True))
            values["grade"] = json.loads(values["grade"]) if values["grade"] else None
            values["missed"] = json.loads(values["missed"])
            out.append(values)  # type: ignore[arg-type]
        return out

    # -- the schedule -----------------------------------------------------

    def record_review(self, session_id: str, question_id: str, score: float, at: datetime) -> bool:
        """Update the question's fsrs card once per session; False when already done."""
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO reviews VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (session_id, question_id, score, at.isoformat()),
            )
            if cur.rowcount != 1:
                return False
            query = "SELECT card, reviews FROM cards WHERE question_id = ?"
            row = conn.execute(query, (question_id,)).fetchone()
            card = review(Card.from_json(row[0]) if row else None, question_id, score, at)
            conn.execute(
                "INSERT INTO cards VALUES (?, ?, ?, ?, ?) ON CONFLICT (question_id) DO UPDATE SET "
                "card = excluded.card, last_score = excluded.last_score, reviews = excluded.reviews, "
                "updated_at = excluded.updated_at",
                (question_id, card.to_json(), score, (row[1] if row else 0) + 1, at.isoformat()),
            )
        return True

    def history(self) -> dict[str, History]:
        """{question id: History} for every question ever graded."""
        with self._tx() as conn:
            rows = conn.execute("SELECT question_id, card, last_score, reviews FROM cards").fetchall()
        out = {}
        for qid, card_json, last_score, reviews in rows:
            try:
                card = Card.from_json(card_json)
            except (ValueError, KeyError, TypeError) as exc:
                raise _unreadable(self.where, f"card for {qid}: {exc}") from exc
            out[qid] = History(qid, last_score=last_score, due=card.due, reviews=reviews)
        return out
