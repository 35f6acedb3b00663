"""LLM backends: chat messages -> text, behind one Protocol.

`make_backend(name, settings)` is the registry. Each factory checks its
settings (key, URL, GGUF path) and fails with a message that says what to set;
it creates no client, loads no model and opens no connection: backends do that
on first use, once. Optional dependencies are imported inside the factories,
so importing this package is cheap.

    >>> backend = make_backend("openai-compatible", load_settings(llm_base_url="http://127.0.0.1:8080/v1"))  # doctest: +SKIP
    >>> backend.complete([{"role": "user", "content": "Say hi."}], max_tokens=8)  # doctest: +SKIP
    'Hi!'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interviewer.errors import UnknownBackend
from interviewer.llm.base import LLMBackend, Messages

if TYPE_CHECKING:
    from interviewer.settings import Settings

__all__ = ["BACKENDS", "LLMBackend", "Messages", "make_backend"]

BACKENDS = ("openai", "openai-compatible", "llama-cpp")


def make_backend(name: str, settings: Settings) -> LLMBackend:
    if name == "openai":
        from interviewer.llm.openai_backend import make_openai

        return make_openai(settings)
    if name == "openai-compatible":
        from interviewer.llm.openai_backend import make_openai_compatible

        return make_openai_compatible(settings)
    if name == "llama-cpp":
        from interviewer.llm.llama_cpp_backend import make_llama_cpp

        return make_llama_cpp(settings)
    raise UnknownBackend(f"Unknown LLM backend {name!r}. Valid: {', '.join(BACKENDS)}.")
