"""Data shapes of the question bank: questions, rubrics, key points.

These are pydantic models because they cross boundaries: rubric files on disk
(validated on load, errors name the file and field) and `--json` output.
This module holds no logic beyond validation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# One shared taxonomy across the four documents. A rubric file that names a
# topic outside this list fails validation with the list in the message.
TOPICS: tuple[str, ...] = (
    "loss-curves",
    "learning-rate",
    "batch-size",
    "gradient-norms",
    "precision",
    "spikes",
    "overfitting-forgetting",
    "normalization",
    "regularization",
    "optimizers",
    "initialization",
    "architecture",
    "distributed-training",
    "memory-arithmetic",
    "scaling-laws",
    "data",
    "distillation",
    "debugging",
    "evaluation",
    "sequence-models",
    "generalization-theory",
    "general",  # user documents whose topic is unknown
)

Difficulty = Literal["easy", "medium", "hard"]
Kind = Literal["question", "quick-fire", "teaser", "user"]


class KeyPoint(BaseModel):
    """One atomic thing a good answer says.

    `alternatives` are other accepted phrasings of the same point, e.g. for
    "cosine decays to about 10% of peak" also "decays to zero". `twin` is the same
    sentence with only its critical words set wrong ("a near-zero gradient norm is
    usually vanishing gradients, not convergence" for "... convergence, not vanishing
    gradients"): the grader reads which of the two an answer says.
    """

    model_config = ConfigDict(extra="forbid")

    # One character is enough: a reference answer may be "4" or "C".
    text: str = Field(min_length=1)
    core: bool = True
    alternatives: list[str] = Field(default_factory=list)
    # what the interviewer asks to draw this point out without stating it (corpus/script)
    probe: str = ""
    twin: str = ""

    @model_validator(mode="after")
    def _twin_differs(self):  # type: ignore[no-untyped-def]
        if self.twin and self.twin.strip().lower() == self.text.strip().lower():
            raise ValueError(f"twin of {self.text!r} is the same claim; set its critical words the other way")
        return self


class Misconception(BaseModel):
    """A wrong claim that costs points when stated (not when negated).

    `twin` is the same sentence with only its critical words set right (a minimal pair).
    """

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=2)
    alternatives: list[str] = Field(default_factory=list)
    twin: str = ""
    # what the interviewer says when a candidate states it: a push-back, not the answer (corpus/script)
    challenge: str = ""

    @model_validator(mode="after")
    def _twin_differs(self):  # type: ignore[no-untyped-def]
        if self.twin and self.twin.strip().lower() == self.text.strip().lower():
            raise ValueError(f"twin of {self.text!r} is the same claim; set its critical words the other way")
        return self


class NumericTarget(BaseModel):
    """The number a numeric question asks for: 2.3026 nats, 112 GB, ..."""

    model_config = ConfigDict(extra="forbid")

    value: float
    unit: str = ""
    tolerance: float = Field(ge=0, description="absolute tolerance, in `unit`")

    def accepts(self, value: float) -> bool:
        return abs(value - self.value) <= self.tolerance + 1e-12


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_points: list[KeyPoint] = Field(min_length=1)
    misconceptions: list[Misconception] = Field(default_factory=list)
    numeric: NumericTarget | None = None
    # True when the key points were split out of a reference answer by
    # `bank.derive_key_points` rather than written as a rubric: the grader uses
    # the aggregation fitted for that case.
    derived: bool = False


class Location(BaseModel):
    """Where in the source document the question came from (character offsets)."""

    file: str
    start: int
    end: int
    section: str = ""


class Question(BaseModel):
    """One bank question with its reference answer and rubric."""

    id: str  # "<doc>-<nn>", e.g. "002-03"
    source: str  # "000" | "002" | "003" | "004" | a user document's stem
    location: Location
    kind: Kind = "question"
    topic: str
    difficulty: Difficulty
    question: str
    short_answer: str = ""
    reference: str
    rubric: Rubric
    # how an interviewer says `question` aloud, and hints of rising strength (corpus/script;
    # empty for user questions, which the templates ask as written)
    ask: str = ""
    hints: list[str] = Field(default_factory=list)
    concept: str | None = None  # questions sharing a concept are never asked twice
    note: bool = False  # the document words it as a terse note ("BF16 needs?"), not as one asks it

    @property
    def key_points(self) -> list[KeyPoint]:
        return self.rubric.key_points

    @property
    def title(self) -> str:
        """The question as a list or a report shows it: the document's own words, or, where
        the document keeps only a note, the way the interviewer asks it."""
        return self.ask if self.note and self.ask else self.question

    def to_public_json(self) -> dict[str, object]:
        """The `interviewer questions --json` shape."""
        return {
            "id": self.id,
            "source": self.source,
            "location": self.location.model_dump(),
            "kind": self.kind,
            "topic": self.topic,
            "difficulty": self.difficulty,
            "concept": self.concept,
            "question": self.question,
            "ask": self.ask,
            "hints": self.hints,
            "short_answer": self.short_answer,
            "reference": self.reference,
            "key_points": [kp.model_dump() for kp in self.rubric.key_points],
            "misconceptions": [m.model_dump() for m in self.rubric.misconceptions],
            "numeric": self.rubric.numeric.model_dump() if self.rubric.numeric else None,
        }


class RubricEntry(BaseModel):
    """One entry of a `corpus/rubrics/<doc>.yaml` file.

    Fields left out keep what the parser extracted. For documents without
    answers (000, 004) the file supplies `reference` and the rubric.
    """

    model_config = ConfigDict(extra="forbid")

    question: str | None = None
    short_answer: str | None = None
    reference: str | None = None
    topic: str | None = None
    difficulty: Difficulty | None = None
    concept: str | None = None
    key_points: list[KeyPoint] | None = None
    misconceptions: list[Misconception] = Field(default_factory=list)
    numeric: NumericTarget | None = None

    @field_validator("topic")
    @classmethod
    def _known_topic(cls, value: str | None) -> str | None:
        if value is not None and value not in TOPICS:
            raise ValueError(f"unknown topic {value!r}; use one of: {', '.join(TOPICS)}")
        return value


class RubricFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    questions: dict[str, RubricEntry]


class ProbeLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    point: str  # the key point's text, exactly as in the rubric
    probe: str = Field(min_length=3)


class ChallengeLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    misconception: str  # the misconception's text, exactly as in the rubric
    challenge: str = Field(min_length=3)


class ScriptEntry(BaseModel):
    """One entry of a `corpus/script/<doc>.yaml` file: what the interviewer says for a question.

    `probes` and `challenges` list the rubric's key points and misconceptions in its order
    (their texts are repeated so a reader of the file sees what each line is for).
    """

    model_config = ConfigDict(extra="forbid")

    ask: str = Field(min_length=3)
    hints: list[str] = Field(min_length=2, max_length=3)
    probes: list[ProbeLine]
    challenges: list[ChallengeLine] = Field(default_factory=list)


class ScriptFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    questions: dict[str, ScriptEntry]
