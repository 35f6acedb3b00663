"""The OpenAI backend, and the same class pointed at any OpenAI-compatible server.

`openai` talks to api.openai.com (or wherever the client's own
`OPENAI_BASE_URL` points); `openai-compatible` talks to
`INTERVIEWER_LLM_BASE_URL`, e.g. a local `llama_cpp.server`. The only other
difference is how a JSON schema is requested: OpenAI wants
`{"type": "json_schema", ...}`, llama.cpp wants `{"type": "json_object",
"schema": ...}`.

Every request is bounded: `llm_timeout_s` per attempt and `llm_retries`
retries, both handed to the client. This module does not check the reply.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from interviewer.errors import BackendUnavailable, InvalidModelReply, MissingCredentials
from interviewer.llm.base import Messages

if TYPE_CHECKING:
    from openai import OpenAI
    from openai.types.chat import ChatCompletionMessageParam

    from interviewer.settings import Settings

OPENAI_URL = "https://api.openai.com/v1"
START_SERVER_HINT = (
    "To run one locally: `python -m interviewer.llm.server` (it prints the URL to set), or "
    "`python -m llama_cpp.server --model M.gguf --host 127.0.0.1 --port 8080` for "
    "http://127.0.0.1:8080/v1."
)


class OpenAIBackend:
    """Chat completions over HTTP with the `openai` client, created on first use."""

    supports_schema = True
    can_stream = True

    def __init__(
        self,
        *,
        name: str,
        model: str,
        api_key: str,
        base_url: str | None,
        timeout_s: float,
        retries: int,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url  # None: the client's default (api.openai.com or OPENAI_BASE_URL)
        self.timeout_s = timeout_s
        self.retries = retries
        self._api_key = api_key
        self._client: OpenAI | None = None
        self._lock = threading.Lock()

    def complete(
        self,
        messages: Messages,
        *,
        json_schema: dict | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        timeout_s: float | None = None,
    ) -> str:
        kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        if json_schema is not None:
            kwargs["response_format"] = self._response_format(json_schema)
        if timeout_s is not None:
            kwargs["timeout"] = timeout_s
        import openai

        try:
            reply = self._get_client().chat.completions.create(
                model=self.model, messages=_params(messages), **kwargs
            )
        except openai.OpenAIError as exc:
            raise self._translate(exc, timeout_s) from self._safe_cause(exc)
        if not reply.choices:
            raise InvalidModelReply(f"{self._where()} returned no choices for model {self.model!r}.")
        message = reply.choices[0].message
        if message.content is None:
            why = f": {message.refusal}" if getattr(message, "refusal", None) else ""
            raise InvalidModelReply(f"{self._where()} returned no text{why}.")
        return message.content

    def stream(self, messages: Messages, *, max_tokens: int = 512) -> Iterator[str]:
        import openai

        try:
            chunks = self._get_client().chat.completions.create(
                model=self.model,
                messages=_params(messages),
                max_tokens=max_tokens,
                temperature=0.0,
                stream=True,
            )
            for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content
        except openai.OpenAIError as exc:
            raise self._translate(exc, None) from self._safe_cause(exc)

    def yes_probability(self, messages: Messages, *, timeout_s: float | None = None) -> float:
        """A one-token reply with its top log-probabilities: P(yes) against P(no) among them.
        A server that sends no log-probabilities (or neither word among them) is read from
        its reply: 1.0 for yes, 0.0 for no."""
        import openai

        kwargs: dict[str, Any] = {"timeout": timeout_s} if timeout_s is not None else {}
        try:
            reply = self._get_client().chat.completions.create(
                model=self.model, messages=_params(messages), max_tokens=1, temperature=0.0,
                logprobs=True, top_logprobs=20, **kwargs,
            )  # fmt: skip
        except openai.OpenAIError as exc:
            raise self._translate(exc, timeout_s) from self._safe_cause(exc)
        if not reply.choices:
            raise InvalidModelReply(f"{self._where()} returned no choices for model {self.model!r}.")
        choice = reply.choices[0]
        content = choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
        shares = {"yes": 0.0, "no": 0.0}
        for top in content[0].top_logprobs if content else []:
            word = top.token.strip().lower()
            if word in shares:
                shares[word] += math.exp(top.logprob)
        if shares["yes"] + shares["no"] > 0:
            return shares["yes"] / (shares["yes"] + shares["no"])
        said = (choice.message.content or "").strip().lower()
        if said.startswith(("yes", "no")):
            return 1.0 if said.startswith("yes") else 0.0
        raise InvalidModelReply(f"{self._where()} answered {said[:40]!r} to a yes/no question.")

    def _get_client(self) -> OpenAI:
        with self._lock:
            if self._client is None:
                from openai import OpenAI

                self._client = OpenAI(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.timeout_s,
                    max_retries=self.retries,
                )
            return self._client

    def _response_format(self, schema: dict) -> dict[str, Any]:
        if self.name == "openai":
            # OpenAI's structured outputs: a name is required; strict mode is left off
            # because it rejects schemas without additionalProperties=false everywhere.
            title = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title", "reply")))[:64]
            return {"type": "json_schema", "json_schema": {"name": title, "schema": schema}}
        return {"type": "json_object", "schema": schema}  # llama.cpp's grammar-constrained JSON

    def _where(self) -> str:
        if self.name == "openai":
            return "OpenAI"
        return f"The LLM server at {self.base_url}"

    def _safe_cause(self, exc: Exception) -> Exception | None:
        """The client's error as the cause, unless its text holds the key (a server may echo the
        Authorization header): then none, so that no logged traceback carries the key."""
        return None if len(self._api_key) >= 8 and self._api_key in str(exc) else exc

    def _translate(self, exc: Exception, timeout_s: float | None) -> Exception:
        """One user-facing error for whatever the client raised, never showing the API key.

        A server or proxy may echo the request, Authorization header included, in its error text.
        """
        error = self._explain(exc, timeout_s)
        if len(self._api_key) >= 8 and self._api_key in str(error):
            return type(error)(str(error).replace(self._api_key, "[redacted]"))
        return error

    def _explain(self, exc: Exception, timeout_s: float | None) -> Exception:
        import openai

        where = self._where()
        tries = f"{self.retries + 1} attempt{'s' if self.retries else ''}"
        if isinstance(exc, openai.APITimeoutError):
            limit = timeout_s if timeout_s is not None else self.timeout_s
            return BackendUnavailable(
                f"{where} did not answer within {limit:g} s ({tries}). "
                "Raise INTERVIEWER_LLM_TIMEOUT_S, or use a smaller model."
            )
        if isinstance(exc, openai.APIConnectionError):
            if self.name == "openai":
                return BackendUnavailable(f"Cannot reach OpenAI ({tries}): {exc}. Check the network.")
            return BackendUnavailable(
                f"Cannot reach the LLM server at {self.base_url} ({tries}). Is it running? "
                + START_SERVER_HINT
            )
        if isinstance(exc, openai.AuthenticationError):
            if self.name == "openai":
                return MissingCredentials("OpenAI rejected the API key — check OPENAI_API_KEY.")
            return MissingCredentials(
                f"{where} wants an API key; the openai-compatible backend sends none. "
                "Run the server without one (llama_cpp.server's default)."
            )
        if isinstance(exc, openai.NotFoundError):
            return BackendUnavailable(
                f"{where} has no model {self.model!r} (HTTP 404) — set INTERVIEWER_LLM_MODEL."
            )
        if isinstance(exc, openai.APIStatusError):
            return BackendUnavailable(f"{where} answered HTTP {exc.status_code}: {exc.message}")
        return BackendUnavailable(f"{where} failed: {exc}")


def _params(messages: Messages) -> list[ChatCompletionMessageParam]:
    return cast("list[ChatCompletionMessageParam]", messages)  # same shape, looser type


def make_openai(settings: Settings) -> OpenAIBackend:
    key = settings.openai_api_key
    if key is None:
        raise MissingCredentials(
            "No OpenAI key found — set OPENAI_API_KEY, or use the openai-compatible backend "
            "with a local server, or the default rubric grader."
        )
    return OpenAIBackend(
        name="openai",
        model=settings.llm_model,
        api_key=key.get_secret_value(),
        base_url=None,
        timeout_s=settings.llm_timeout_s,
        retries=settings.llm_retries,
    )


def make_openai_compatible(settings: Settings) -> OpenAIBackend:
    if not settings.llm_base_url:
        raise MissingCredentials(
            "No server URL for the openai-compatible backend — set INTERVIEWER_LLM_BASE_URL "
            "(e.g. http://127.0.0.1:8080/v1). " + START_SERVER_HINT
        )
    return OpenAIBackend(
        name="openai-compatible",
        model=settings.llm_model,
        # Never OPENAI_API_KEY: that would hand the user's OpenAI key to whatever server
        # the URL names. llama_cpp.server needs no key; the client needs a non-empty one.
        api_key="not-needed",
        base_url=settings.llm_base_url,
        timeout_s=settings.llm_timeout_s,
        retries=settings.llm_retries,
    )
