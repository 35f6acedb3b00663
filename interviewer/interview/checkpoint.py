"""Where interview graphs save their state between turns.

`make_checkpointer(settings)` returns a LangGraph checkpointer: SQLite in the
data directory by default (one process, or several taking turns), or Postgres
when `INTERVIEWER_DATABASE_URL` (or the older `INTERVIEWER_CHECKPOINT_URL`) is set (several app instances sharing
sessions). Postgres needs the `postgres` extra; it is imported only here.

This module stores no progress (progress.py) and knows nothing of the graph.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from interviewer.errors import BackendUnavailable, StorageError
from interviewer.settings import Settings


def make_sqlite_checkpointer(settings: Settings) -> BaseCheckpointSaver[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    settings.ensure_home()
    path = settings.checkpoint_path
    conn = sqlite3.connect(path, check_same_thread=False)  # the app answers from worker threads
    saver = SqliteSaver(conn)
    try:
        # WAL with synchronous=NORMAL: a commit is a write to the log, not two fsyncs. It survives
        # the process being killed (the crash tests); only a power cut can drop the last turns.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver.setup()
        conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StorageError(
            f"The session checkpoints at {path} cannot be read ({exc}). Move the file aside "
            f"(`mv {path} {path}.bad`): unfinished sessions are lost, your progress history is not."
        ) from exc
    return saver


def make_postgres_checkpointer(url: str) -> BaseCheckpointSaver[Any]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import OperationalError
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool, PoolTimeout
    except ImportError as exc:
        raise BackendUnavailable(
            "A Postgres database URL is set but the Postgres checkpointer is not installed: "
            "`pip install 'interviewer[postgres]'`, or unset the variable to use SQLite."
        ) from exc
    try:  # one direct connection first: a dead server fails now, not after the pool's retries
        psycopg.connect(url, connect_timeout=5).close()
    except OperationalError as exc:
        raise _unreachable(exc) from exc
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        min_size=1,
        max_size=8,
        open=False,
    )
    try:
        pool.open(wait=True, timeout=10)
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()  # idempotent: creates or migrates the tables
    except (OperationalError, PoolTimeout) as exc:
        pool.close()
        raise _unreachable(exc) from exc
    return saver


def _unreachable(exc: Exception) -> BackendUnavailable:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return BackendUnavailable(
        f"Cannot reach the Postgres checkpoint database ({exc.__class__.__name__}: {first_line}). "
        "Check INTERVIEWER_DATABASE_URL (or INTERVIEWER_CHECKPOINT_URL) and that the server is running, "
        "or unset it to use SQLite."
    )


def make_checkpointer(settings: Settings) -> BaseCheckpointSaver[Any]:
    """The checkpointer the settings ask for. Close it with `close_checkpointer`."""
    url = settings.database_url or settings.checkpoint_url
    if url:
        return make_postgres_checkpointer(url)
    return make_sqlite_checkpointer(settings)


def close_checkpointer(saver: BaseCheckpointSaver[Any]) -> None:
    """Close the checkpointer's connection or pool (SQLite and Postgres alike)."""
    conn = getattr(saver, "conn", None)
    close = getattr(conn, "close", None)
    if callable(close):
        close()
