"""The error tree. Every message says what the user can do about it.

The CLI turns any `InterviewerError` into one clean line and a non-zero exit;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class InterviewerError(Exception):
    """Base class: a problem the user can fix. The message says how."""


class BankError(InterviewerError):
    """A rubric or bank file is malformed (the message names file and field)."""


class CorpusNotIndexed(InterviewerError):
    """The vector store is missing or empty."""


class QuestionNotFound(InterviewerError):
    """No question with that id, or no bank question matches the text."""


class BackendUnavailable(InterviewerError):
    """A backend cannot be reached or is not installed."""


class MissingCredentials(InterviewerError):
    """A backend needs a key that is not set."""


class UnknownBackend(InterviewerError):
    """A backend name that is not registered (the message lists valid ones)."""


class InvalidModelReply(InterviewerError):
    """An LLM reply failed validation (bad JSON, schema, or invented evidence)."""


class BadAudio(InterviewerError):
    """Audio that cannot be decoded, is empty, silent, or too long."""


class BadInput(InterviewerError):
    """User input that cannot be used (the message says why)."""


class StorageError(InterviewerError):
    """A progress database or checkpoint that is corrupt or unreadable."""
