"""Logging, configured once at the CLI edge: stderr for the user, a rotating file for bug reports.

`configure_logging()` reads `-v` counts and `INTERVIEWER_LOG_LEVEL`; the app
(`interviewer ui`) also writes `interviewer.log` in the data directory. A filter
on every handler masks secrets (API keys, passwords, database URLs with a
password) so that no log line ever carries one. Library modules only call
`logging.getLogger(__name__)`; nothing here runs at import.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
from pathlib import Path

LOG_FILE = "interviewer.log"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"
MAX_BYTES = 2_000_000  # per file; 3 files kept
_CONFIGURED = "_interviewer_handler"

# The secret environment variables whose values never reach a log.
SECRET_ENV = ("OPENAI_API_KEY", "INTERVIEWER_AUTH", "INTERVIEWER_DATABASE_URL", "INTERVIEWER_CHECKPOINT_URL")
# Shapes of secrets that may arrive in messages: "sk-..." keys, user:password@ in URLs, Bearer tokens.
SECRET_PATTERNS = (
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), "***"),
    (re.compile(r"(?<=://)[^:/@\s]+:[^@\s]+@"), "***@"),
    (re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._\-]{8,}"), "***"),
)


def mask_secrets(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with every known secret value and secret-shaped token replaced.

    >>> mask_secrets("postgresql://me:hunter2@db/x and sk-abcdefghijkl")
    'postgresql://***@db/x and ***'
    """
    for value in secrets:
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    for pattern, mask in SECRET_PATTERNS:
        text = pattern.sub(mask, text)
    return text


class SecretFilter(logging.Filter):
    """Masks secrets in a record's rendered message and traceback (applied on each handler)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets = tuple(v for k in SECRET_ENV if (v := os.environ.get(k)))

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask_secrets(record.getMessage(), self.secrets)
        record.args = None
        if record.exc_info:
            record.exc_text = mask_secrets(logging.Formatter().formatException(record.exc_info), self.secrets)
            record.exc_info = None
        return True


def level_for(verbosity: int, env: str | None) -> int:
    """-v -> INFO, -vv -> DEBUG; otherwise INTERVIEWER_LOG_LEVEL (a name or number); default WARNING.

    >>> level_for(0, None), level_for(1, None), level_for(2, "error"), level_for(0, "info")
    (30, 20, 10, 20)
    """
    if verbosity:
        return logging.DEBUG if verbosity > 1 else logging.INFO
    if env:
        value = env.strip().upper()
        if value.isdigit():
            return int(value)
        level = logging.getLevelName(value)
        if isinstance(level, int):
            return level
    return logging.WARNING


def configure_logging(verbosity: int = 0, home: Path | None = None) -> None:
    """Once per process: stderr at the chosen level; with `home`, also a rotating file at INFO or lower."""
    root = logging.getLogger()
    level = level_for(verbosity, os.environ.get("INTERVIEWER_LOG_LEVEL"))
    if not any(getattr(h, _CONFIGURED, False) for h in root.handlers):
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        console.addFilter(SecretFilter())
        setattr(console, _CONFIGURED, True)
        console.setLevel(level)
        root.addHandler(console)
    if home is not None:
        add_log_file(home, min(level, logging.INFO))
    root.setLevel(min([level, *(h.level for h in root.handlers if getattr(h, _CONFIGURED, False))]))
    for noisy in ("httpx", "httpcore", "urllib3", "chromadb", "sentence_transformers", "matplotlib", "PIL"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def add_log_file(home: Path, level: int = logging.INFO) -> Path:
    """A rotating log file in the data directory (the app's; attach it to a bug report)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / LOG_FILE
    root = logging.getLogger()
    for h in root.handlers:
        if isinstance(h, logging.handlers.RotatingFileHandler) and Path(h.baseFilename) == path.resolve():
            return path
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(SecretFilter())
    handler.setLevel(level)
    setattr(handler, _CONFIGURED, True)
    root.addHandler(handler)
    root.setLevel(min(root.level, level))
    return path
