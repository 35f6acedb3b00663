"""The one interface every LLM backend implements.

A backend turns chat messages into text. It does not parse, validate or
repair what the model says: a reply cut off at `max_tokens`, or JSON that
does not match the schema, comes back as the raw text, and the caller (the
LLM grader) validates it and raises `InvalidModelReply`. Backends raise only
`InterviewerError`s whose messages say what to do (start a server, set a key).

Messages use the OpenAI chat shape:

    [{"role": "system", "content": "You grade answers."},
     {"role": "user", "content": "What does Adam's epsilon do?"}]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

Messages = list[dict[str, str]]  # [{"role": "system"|"user"|"assistant", "content": str}, ...]


class LLMBackend(Protocol):
    name: str  # "openai" | "openai-compatible" | "llama-cpp"
    model: str  # what the backend asks for: an API model id, or the GGUF file's stem
    supports_schema: bool  # `complete(json_schema=...)` constrains the output to that schema
    can_stream: bool

    def complete(
        self,
        messages: Messages,
        *,
        json_schema: dict | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        timeout_s: float | None = None,
    ) -> str:
        """The model's reply text, unvalidated. `timeout_s=None` uses the settings' timeout."""
        ...

    def stream(self, messages: Messages, *, max_tokens: int = 512) -> Iterator[str]:
        """The reply in pieces as the model produces them (joined, they equal the reply)."""
        ...

    def yes_probability(self, messages: Messages, *, timeout_s: float | None = None) -> float:
        """P(yes) / (P(yes) + P(no)) for the reply's first word, read from the model's
        next-token probabilities (nothing is sampled, so it repeats). For yes/no questions
        only; a server that returns no probabilities gives 1.0 or 0.0 from its reply."""
        ...
