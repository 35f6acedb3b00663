"""The second reader: an instruct LLM asked whether one sentence of the answer says one claim.

The embedded grader finds, for every rubric claim, the sentence of the answer closest to
it. Sentence vectors read what a sentence is about, not which way round it says it
("a bad batch rather than an fp16 instability" and its reverse land on one point), so an
answer that is a right answer with its critical words set wrong still earns the point.
With a second reader (`INTERVIEWER_VERIFY=llama-cpp`, or `grade --verify llama-cpp`), the
grader asks a model, for each key point it credits and each misconception it finds close
to a sentence, two yes/no questions: does this sentence say this claim, and does it say the
claim's twin (the rubric's minimal pair: the same sentence with its critical words set the
other way)? Each answer is read as a probability from the model's next-token scores
(`LLMBackend.yes_probability`), so nothing is sampled and a read repeats; the share the
claim takes of the two is the reading.

`decision.decide` turns the readings into the grade with thresholds fitted on the
calibration split (`evals/verify_sweep.py`, `Calibration.second_reader`): a credited point
whose sentence the reader hears as its twin earns nothing and the twin is named as a wrong
claim, quoted and corrected; a misconception heard as said is named, one heard as its
corrected twin is not; an answer with a wrong claim the reader confirmed is capped.

Off by default: a read is one model call (about 0.5 s with Qwen2.5-Coder-1.5B on two cores,
the instructions cached between reads), two per claim read and several claims per grade
(2.6 s a grade at p50 on the held-out split), where the embedded grade takes 35 ms. With
that model it moves the independent probes by noise (README, "Known weaknesses"). This
module decides nothing; it only asks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from interviewer.llm import make_backend

if TYPE_CHECKING:
    from interviewer.corpus.schema import Question
    from interviewer.grading.decision import Analysis
    from interviewer.grading.grade import Grade
    from interviewer.llm.base import LLMBackend
    from interviewer.settings import Settings

log = logging.getLogger(__name__)

SYSTEM = (
    "You are a careful examiner for machine-learning interviews. You check whether a "
    "candidate's sentence agrees with a claim from the answer key.\n"
    "I will give you a claim from the answer key and a sentence a candidate said. Decide "
    "whether the candidate's sentence says the same thing as the claim. Say no if the sentence "
    "reverses a direction, swaps the roles of two things, names a different term or method, "
    "gives a different number, or states something the claim contradicts. Different wording, "
    "extra detail or a filler word is fine. Reply with one word: yes or no."
)
ASK = "Answer key claim: {claim}\nCandidate's sentence: {sentence}\nSame claim?"
# A misconception is read only where a sentence is at least this close to it (MiniLM cosine)
# or the embedded detector already names it: a far sentence says neither.
MISCONCEPTION_GATE = 0.5
MAX_SENTENCE_CHARS = 600  # an unpunctuated transcript is one long "sentence": read its start
MAX_REMEMBERED = 20_000  # reads kept in a long-running app; the oldest go first


@dataclass(frozen=True)
class Readings:
    """Per rubric claim, how much more the quoted sentence says the claim than its twin (the
    same claim with its critical words set the other way): P(claim) / (P(claim) + P(twin)),
    0.5 where the reader cannot tell them apart; None where it was not read."""

    key_points: list[float | None]
    misconceptions: list[float | None]


class SecondReader:
    """Asks an LLM backend one yes/no question per (claim, sentence); remembers the answers."""

    def __init__(self, backend: LLMBackend) -> None:
        self.backend = backend
        self.memo: dict[tuple[str, str], float] = {}  # (claim, sentence) -> P(yes); evals save and load it

    def agrees(self, claim: str, sentence: str) -> float:
        """P(the sentence says the claim), in [0, 1]."""
        key = (claim, sentence[:MAX_SENTENCE_CHARS])
        if key not in self.memo:
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": ASK.format(claim=key[0], sentence=key[1])},
            ]
            if len(self.memo) >= MAX_REMEMBERED:
                del self.memo[next(iter(self.memo))]
            self.memo[key] = self.backend.yes_probability(messages)
        return self.memo[key]

    def prefers(self, claim: str, twin: str, sentence: str) -> float:
        """P(claim) / (P(claim) + P(twin)) for one sentence. Asked about one claim alone, a
        small model says yes to most sentences on its topic (calibration split: P(yes) has
        median 0.41 whatever the sentence says); against the twin that shares its topic, what
        is left is which way round the sentence says it (AUC for a stated misconception 0.80
        alone, 0.90 against its twin)."""
        said, other = self.agrees(claim, sentence), self.agrees(twin, sentence)
        return said / (said + other) if said + other > 0 else 0.5

    def read(self, question: Question, analysis: Analysis, first: Grade) -> Readings:
        """The reads one grade needs: each key point the first grade credits, against the
        sentence quoted for it; each misconception named or close to a sentence, against that
        sentence. Only claims with a twin are read (every misconception and core point has one)."""
        if not analysis.sentences:
            return Readings([], [])
        points: list[float | None] = []
        for kp, features, result in zip(
            question.key_points, analysis.key_points, first.key_points, strict=True
        ):
            said = result.status != "missed" and bool(kp.twin)
            points.append(self.prefers(kp.text, kp.twin, analysis.sentences[features.span]) if said else None)
        named = {m.text for m in first.misconceptions}
        wrong: list[float | None] = []
        for m, mf in zip(question.rubric.misconceptions, analysis.misconceptions, strict=True):
            near = (mf.similarity >= MISCONCEPTION_GATE or m.text in named) and bool(m.twin)
            wrong.append(self.prefers(m.text, m.twin, analysis.sentences[mf.span]) if near else None)
        return Readings(points, wrong)


def second_reader(settings: Settings) -> SecondReader | None:
    """The second reader the settings name (`verify`: an LLM backend name), or None when off.
    The backend checks its own settings (a GGUF path, a server URL) and says what to set."""
    if not settings.verify:
        return None
    backend = make_backend(settings.verify, settings)
    log.info(
        "second reader on: %s (%s) checks each credited point and near misconception",
        backend.name,
        backend.model,
    )
    return SecondReader(backend)
