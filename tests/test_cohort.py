"""A cohort: two `interviewer ui` processes share one Postgres database and one Chroma server.

`INTERVIEWER_DATABASE_URL` puts the progress store and the session checkpoints in
Postgres, `INTERVIEWER_CHROMA_URL` the vector store on a `chroma run` server. Then any
instance serves any session: one killed mid-session is picked up by the other, and one
report covers what both recorded. Real processes, driven over HTTP with gradio_client.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interviewer.corpus.bank import load_bank
from interviewer.evaluation.load import App, free_port
from interviewer.settings import load_settings

pytestmark = pytest.mark.slow


@pytest.fixture
def chroma_url(tmp_path: Path, built_index: Path) -> Iterator[str]:
    """A `chroma run` server on a free local port, serving a copy of the test run's built index
    (the same on-disk store a local data directory keeps): `interviewer index` against it then
    checks every chunk instead of embedding all 396 again (about 20 s of the test's CPU)."""
    shutil.copytree(built_index / "chroma", tmp_path / "chroma")
    chroma = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    port = free_port()
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "chroma"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2):
                break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("the chroma server did not start")
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def client(app: App) -> Any:
    from gradio_client import Client

    return Client(app.url, verbose=False)


def asked(result: dict[str, Any]) -> str:
    """The id of the question the session now waits on."""
    return next(e["question_id"] for e in reversed(result["events"]) if e["type"] == "question")


def test_two_app_processes_share_sessions_and_one_report_covers_both(  # type: ignore[no-untyped-def]
    tmp_path: Path, built_index: Path, postgres_url: str, chroma_url: str, monkeypatch
) -> None:
    monkeypatch.setenv("INTERVIEWER_DATABASE_URL", postgres_url)
    monkeypatch.setenv("INTERVIEWER_CHROMA_URL", chroma_url)
    homes = [tmp_path / "one", tmp_path / "two"]
    for home in homes:  # each instance's own caches: the rubric vectors `interviewer index` writes
        (home / "cache").mkdir(parents=True)
        for cached in (built_index / "cache").glob("rubric-vectors-*"):
            shutil.copy(cached, home / "cache" / cached.name)
    env = {**os.environ, "INTERVIEWER_HOME": str(homes[0])}
    indexed = subprocess.run(
        [sys.executable, "-m", "interviewer.cli", "index"],
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
        text=True,
    )
    said = indexed.stdout + indexed.stderr
    assert "396 chunks (0 embedded" in said and "0 embedded in" in said, said  # nothing embedded again
    bank = load_bank(load_settings())
    one, two = App(homes[0]), App(homes[1])
    try:
        # a session on the first instance: one answer, then the process dies
        first = client(one).predict(questions=2, mode="drill", source="004", api_name="/start")
        sid = first["session_id"]
        q1 = asked(first)
        after = client(one).predict(session_id=sid, text=bank.get(q1).reference, api_name="/answer")
        q2 = asked(after)
        assert after["number"] == 2 and q2 != q1
        # another candidate on the second instance
        other = client(two).predict(questions=1, mode="drill", source="002", api_name="/start")
        q3 = asked(other)
        done = client(two).predict(
            session_id=other["session_id"], text=bank.get(q3).reference, api_name="/answer"
        )
        assert done["finished"]
        one.proc.kill()  # no shutdown: the next turn must come from what the database holds
        one.proc.wait(timeout=30)
        resumed = client(two).predict(session_id=sid, text=bank.get(q2).reference, api_name="/answer")
        assert [e["type"] for e in resumed["events"]][:2] == ["answer", "grade"]
        assert resumed["finished"]
    finally:
        one.stop()
        two.stop()
    for home in homes:  # nothing of the cohort's history is kept per instance
        assert not (home / "progress.sqlite").exists() and not (home / "checkpoints.sqlite").exists()
    report = subprocess.run(
        [sys.executable, "-m", "interviewer.cli", "report", "--all"],
        env={**os.environ, "INTERVIEWER_HOME": str(tmp_path / "reader")},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    for qid in (q1, q2, q3):
        assert qid in report, (qid, report[:2000])
