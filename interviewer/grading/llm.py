"""The LLM grader: per-key-point verdicts with quoted evidence, from any LLM backend.

The model is asked for JSON (schema-constrained where the backend supports
it), at temperature 0, with the answer fenced as data. Its reply is validated
with pydantic; a verdict whose evidence is not found in the answer is
rejected (the point counts as missed). The score is computed by the shared
aggregator from the verdicts, never taken from the model. Numbers are checked
deterministically, as in the embedded grader. Empty, "don't know" and
gibberish answers never reach the model.

On any failure (server down, timeout, invalid JSON twice) it falls back to the
embedded grader and the Grade says so in `grader.fallback` and `flags`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from difflib import SequenceMatcher
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from interviewer.corpus.schema import Question
from interviewer.errors import InterviewerError, InvalidModelReply
from interviewer.grading.feedback import build_grade
from interviewer.grading.grade import Grade, KeyPointResult, MisconceptionResult, Provenance, aggregate
from interviewer.grading.prompts import GRADER_RETRY, GRADER_SYSTEM, GRADER_USER, prompt_hash
from interviewer.grading.rubric import Analysis, RubricGrader, screen_answer
from interviewer.llm import LLMBackend

log = logging.getLogger(__name__)

VERSION = "llm-2"


class PointVerdict(BaseModel):
    index: int
    status: Literal["covered", "partial", "missed"]
    evidence: str = ""


class MisconceptionVerdict(BaseModel):
    index: int
    evidence: str = ""


class Verdicts(BaseModel):
    key_points: list[PointVerdict]
    misconceptions: list[MisconceptionVerdict] = []

    @classmethod
    def parse(cls, reply: str) -> Verdicts:
        """The model's JSON reply, with its key points keyed by index ({"0": {...}}, as the
        schema asks) or listed with an "index" field (as unconstrained models often write).
        A raw line break inside a quoted string (llama.cpp's grammar lets one through) is read
        as text, not rejected."""
        data = json.loads(reply, strict=False)
        points = data.get("key_points") if isinstance(data, dict) else None
        if isinstance(points, dict):
            data["key_points"] = [
                {"index": int(k) if k.isdigit() else k, **v} if isinstance(v, dict) else v
                for k, v in points.items()
            ]
        return cls.model_validate(data)


def verdict_schema(points: int, misconceptions: int) -> dict[str, Any]:
    """The reply's JSON schema for one question: one verdict for each of its key points,
    keyed "0" … "points-1", all required. A schema-constrained backend (llama.cpp's
    grammar, OpenAI's structured outputs) then cannot leave a point out or invent one,
    which small local models otherwise do (SmolLM2-135M: 30 of 33 held-out grades fell
    back for it). Only keywords every constrained decoder accepts: objects with required
    properties, enums, arrays."""
    verdict = {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["covered", "partial", "missed"]},
            "evidence": {"type": "string"},
        },
        "required": ["status", "evidence"],
        "additionalProperties": False,
    }
    index: dict[str, Any] = (
        {"type": "integer", "enum": list(range(misconceptions))} if misconceptions else {"type": "integer"}
    )
    stated: dict[str, Any] = {
        "type": "object",
        "properties": {"index": index, "evidence": {"type": "string"}},
        "required": ["index", "evidence"],
        "additionalProperties": False,
    }
    return {
        "title": "Verdicts",
        "type": "object",
        "properties": {
            "key_points": {
                "type": "object",
                "properties": {str(i): verdict for i in range(points)},
                "required": [str(i) for i in range(points)],
                "additionalProperties": False,
            },
            "misconceptions": {"type": "array", "items": stated, "maxItems": misconceptions},
        },
        "required": ["key_points", "misconceptions"],
        "additionalProperties": False,
    }


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def evidence_in_answer(evidence: str, answer: str, min_ratio: float = 0.85) -> bool:
    """Is the quoted evidence really in the answer (verbatim up to case, punctuation, small slips)?

    >>> evidence_in_answer("clip at 1.0", "You should Clip at 1.0, always.")
    True
    >>> evidence_in_answer("restart from scratch", "roll back to a checkpoint")
    False
    """
    ev, ans = _norm(evidence), _norm(answer)
    if not ev:
        return False
    if ev in ans:
        return True
    match = SequenceMatcher(None, ans, ev, autojunk=False).find_longest_match(0, len(ans), 0, len(ev))
    return match.size / len(ev) >= min_ratio


class LLMGrader:
    name = "llm"

    def __init__(self, backend: LLMBackend, fallback: RubricGrader, max_attempts: int = 2) -> None:
        self.backend = backend
        self.fallback = fallback
        self.max_attempts = max_attempts
        self.rejections: list[str] = []  # what validation caught, for reports

    def _messages(self, question: Question, answer: str) -> list[dict[str, str]]:
        fenced = answer.replace("</answer>", "< /answer>").replace("<answer>", "< answer>")
        user = GRADER_USER.format(
            question=question.title,  # the grill's notes ("BF16 needs?") as the candidate heard them
            reference=question.reference,
            key_points="\n".join(f"{i}. {kp.text}" for i, kp in enumerate(question.key_points)),
            misconceptions="\n".join(f"{i}. {m.text}" for i, m in enumerate(question.rubric.misconceptions))
            or "(none)",
            answer=fenced[:8000],
        )
        return [{"role": "system", "content": GRADER_SYSTEM}, {"role": "user", "content": user}]

    def _ask(self, question: Question, answer: str) -> Verdicts:
        messages = self._messages(question, answer)
        schema = verdict_schema(len(question.key_points), len(question.rubric.misconceptions))
        problem = ""
        for _ in range(self.max_attempts):
            reply = self.backend.complete(
                messages,
                json_schema=schema if self.backend.supports_schema else None,
                max_tokens=700,
                temperature=0.0,
            )
            try:
                verdicts = Verdicts.parse(reply)
                n = len(question.key_points)
                if sorted({v.index for v in verdicts.key_points}) != list(range(n)):
                    raise ValueError(f"expected one verdict for each key point 0..{n - 1}")
                return verdicts
            except (json.JSONDecodeError, ValidationError, ValueError) as exc:
                problem = f"{exc.__class__.__name__}: {str(exc)[:200]}"
                self.rejections.append(problem)
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply[:2000]},
                    {"role": "user", "content": GRADER_RETRY.format(problem=problem)},
                ]
        raise InvalidModelReply(f"the model's grading reply was invalid ({problem})")

    def grade(self, question: Question, answer: str) -> Grade:
        t0 = time.perf_counter()
        screened = screen_answer(question, answer)  # the cheap gates and the number: no model
        if screened.nothing_to_grade:
            grade = self.fallback.decide(
                question, Analysis(flags=screened.flags, numeric=screened.numeric), t0
            )
            return grade.model_copy(update={"grader": self._provenance()})
        try:
            verdicts = self._ask(question, answer)
        except InterviewerError as exc:
            log.warning("LLM grader failed on %s; graded by the embedded grader", question.id, exc_info=True)
            # only now the embedded analysis (its models load on first use)
            grade = self.fallback.decide(question, self.fallback.analyze(question, answer), t0)
            return grade.model_copy(
                update={
                    "flags": [*grade.flags, "llm-fallback"],
                    "grader": self._provenance(fallback=str(exc)),
                }
            )
        results = []
        rejected = 0
        by_index = {v.index: v for v in verdicts.key_points}
        for i, kp in enumerate(question.key_points):
            v = by_index[i]
            status, evidence = v.status, v.evidence.strip()
            if status != "missed" and not evidence_in_answer(evidence, answer):
                rejected += 1
                self.rejections.append(f"evidence not in answer: {evidence[:80]!r}")
                status, evidence = "missed", ""
            credit = {"covered": 1.0, "partial": 0.5, "missed": 0.0}[status]
            results.append(
                KeyPointResult(
                    text=kp.text, core=kp.core, status=status, evidence=evidence, confidence=credit
                )
            )
        stated = []
        for m in verdicts.misconceptions:
            if 0 <= m.index < len(question.rubric.misconceptions) and evidence_in_answer(m.evidence, answer):
                stated.append(
                    MisconceptionResult(
                        text=question.rubric.misconceptions[m.index].text, evidence=m.evidence
                    )
                )
        numeric = screened.numeric
        flags = list(screened.flags)
        if rejected:
            flags.append(f"evidence-rejected:{rejected}")
        params = self.fallback.calibration.for_question(question)[0]
        score = aggregate(results, stated, numeric, params, flags=flags)
        return build_grade(
            score, results, stated, numeric, flags, self._provenance(), t0,
            injection_cap=params.injection_cap, reference=question.reference,
        )  # fmt: skip

    def _provenance(self, fallback: str | None = None) -> Provenance:
        return Provenance(
            grader=self.name,
            version=VERSION,
            model=f"{self.backend.name}:{self.backend.model}",
            prompt_hash=prompt_hash(),
            fallback=fallback,
        )
