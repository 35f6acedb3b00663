"""Graders: answer + rubric -> `Grade`.

`make_grader(name, settings)` is the registry. Graders import their heavy
dependencies lazily, so importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from interviewer.errors import UnknownBackend
from interviewer.grading.grade import Grade

if TYPE_CHECKING:
    from interviewer.corpus.schema import Question
    from interviewer.settings import Settings

__all__ = ["GRADERS", "Grade", "Grader", "make_grader"]


class Grader(Protocol):
    name: str

    def grade(self, question: Question, answer: str) -> Grade:
        """Grade one answer against the question's rubric. Never raises on bad answers."""
        ...


def _rubric(settings: Settings) -> Grader:
    from interviewer.grading.rubric import RubricGrader

    return RubricGrader(settings)


def _llm(settings: Settings, backend: str) -> Grader:
    from interviewer.grading.llm import LLMGrader
    from interviewer.grading.rubric import RubricGrader
    from interviewer.llm import make_backend

    return LLMGrader(make_backend(backend, settings), fallback=RubricGrader(settings))


# name -> factory. "rubric" is the embedded default (no LLM, deterministic);
# every LLM backend name grades through the LLM grader.
GRADERS = ("rubric", "openai", "openai-compatible", "llama-cpp")


def make_grader(name: str, settings: Settings) -> Grader:
    if name == "rubric":
        return _rubric(settings)
    if name in GRADERS:
        return _llm(settings, name)
    raise UnknownBackend(f"Unknown grader backend {name!r}. Valid: {', '.join(GRADERS)}.")
