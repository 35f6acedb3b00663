"""Parsers: source document text -> `ParsedQuestion`s.

One parser per document shape, plus `detect_and_parse` for user documents.
Parsers only extract what the text says; rubrics, topics and the answers that
000 and 004 lack come from `corpus/rubrics/*.yaml` (see `bank.py`).

Example (002's shape):
    >>> qs = parse_grill("A. Loss curves\\n\\n1. Why? Because.\\n\\nSaying it out loud. Long.\\n", "x.txt")
    >>> (qs[0].number, qs[0].question, qs[0].short_answer, qs[0].reference)
    (1, 'Why?', 'Because.', 'Long.')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from interviewer.corpus.schema import Location


@dataclass(frozen=True)
class ParsedQuestion:
    number: int  # 1-based position in its document
    question: str
    location: Location
    kind: str = "question"
    short_answer: str = ""
    reference: str = ""  # "" when the document carries no answer
    difficulty: str | None = None  # only 003 tags difficulty
    signal: str = ""  # 000: what the interviewer listens for
    note: bool = False  # 002: the document words the question as a terse note ("BF16 needs?")


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _split_question(line: str) -> tuple[str, str]:
    """'Flat early loss? LR too low; frozen.' -> ('Flat early loss?', 'LR too low; frozen.')"""
    mark = line.find("?")
    if mark < 0:
        return line.strip(), ""
    return line[: mark + 1].strip(), line[mark + 1 :].strip()


def parse_teasers(text: str, file: str) -> list[ParsedQuestion]:
    """000: a title line, then one paragraph per topic teaser."""
    out: list[ParsedQuestion] = []
    for match in re.finditer(r"[^\n]+(?:\n[^\n]+)*", text):
        para = match.group(0).strip()
        if len(para) < 80:  # the one-word title line
            continue
        sentences = _SENTENCE_END.split(para)
        signal = " ".join(
            s for s in sentences if re.search(r"\b(signal|reward|want|matters|counts|grade)\b", s, re.I)
        )
        out.append(
            ParsedQuestion(
                number=len(out) + 1,
                question=para,
                location=Location(file=file, start=match.start(), end=match.end()),
                kind="teaser",
                signal=signal or para,
            )
        )
    return out


_GRILL_ITEM = re.compile(r"^(\d+)\. (.+)$", re.M)
_SECTION = re.compile(r"^([A-G])\. (.+)$", re.M)
_QUICK_ITEM = re.compile(r"(\d+)\. ([^?]+\?)\s*(.+?)(?=\s+\d+\. |$)", re.S)


def parse_grill(text: str, file: str) -> list[ParsedQuestion]:
    """002: `N. Question? Short answer.` + 'Saying it out loud.' paragraph, then quick fire."""
    sections = [(m.start(), m.group(2).strip()) for m in _SECTION.finditer(text)]
    quick_start = text.find("\nQuick fire")
    body = text if quick_start < 0 else text[:quick_start]
    out: list[ParsedQuestion] = []
    for m in _GRILL_ITEM.finditer(body):
        question, short = _split_question(m.group(2))
        after = body[m.end() :]
        ref = re.match(r"\s*Saying it out loud\.\s*(.+?)(?:\n\s*\n|\Z)", after, re.S)
        reference = ref.group(1).strip() if ref else ""
        end = m.end() + (ref.end() if ref else 0)
        section = next((name for pos, name in reversed(sections) if pos < m.start()), "")
        out.append(
            ParsedQuestion(
                number=int(m.group(1)),
                question=question,
                short_answer=short,
                reference=reference,
                location=Location(file=file, start=m.start(), end=end, section=section),
                note=True,
            )
        )
    if quick_start >= 0:
        block_start = text.find("\n", quick_start + 1) + 1
        block_end = text.find("\n\n", block_start + 1)
        block = text[block_start : block_end if block_end > 0 else len(text)]
        for m in _QUICK_ITEM.finditer(block):
            answer = m.group(3).strip()
            out.append(
                ParsedQuestion(
                    number=int(m.group(1)),
                    question=m.group(2).strip(),
                    short_answer=answer,
                    reference=answer,
                    kind="quick-fire",
                    note=True,
                    location=Location(
                        file=file,
                        start=block_start + m.start(),
                        end=block_start + m.end(),
                        section="Quick fire",
                    ),
                )
            )
    return out


_TAGGED_FIRST_BULLET = re.compile(r"^(easy|medium|hard)- (.+)$")


def parse_tagged_bullets(text: str, file: str) -> list[ParsedQuestion]:
    """003: question line, then `<difficulty>- first bullet`, then `- ` bullets."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out: list[ParsedQuestion] = []
    i = 0
    while i < len(lines):
        tagged = _TAGGED_FIRST_BULLET.match(lines[i].strip())
        if tagged and i > 0:
            bullets = [tagged.group(2).strip()]
            j = i + 1
            while j < len(lines) and lines[j].startswith("- "):
                bullets.append(lines[j][2:].strip())
                j += 1
            out.append(
                ParsedQuestion(
                    number=len(out) + 1,
                    question=lines[i - 1].strip(),
                    difficulty=tagged.group(1),
                    short_answer=bullets[0],
                    reference="\n".join(f"- {b}" for b in bullets),
                    location=Location(file=file, start=offsets[i - 1], end=offsets[j]),
                )
            )
            i = j
        else:
            i += 1
    return out


def parse_question_list(text: str, file: str) -> list[ParsedQuestion]:
    """004: a title, then one question per paragraph, no answers."""
    out: list[ParsedQuestion] = []
    for m in re.finditer(r"[^\n]+", text):
        line = m.group(0).strip()
        if not line.endswith("?") and not re.search(r"\?\s*\(.*\)\s*$", line):
            continue
        out.append(
            ParsedQuestion(
                number=len(out) + 1,
                question=line,
                location=Location(file=file, start=m.start(), end=m.end()),
            )
        )
    return out


def detect_and_parse(text: str, file: str) -> list[ParsedQuestion]:
    """Extract questions from a user document, trying the known shapes in turn.

    Returns [] when the document has no recognisable question/answer shape
    (it is still chunked and searchable).
    """
    if "Saying it out loud." in text:
        return parse_grill(text, file)
    if re.search(r"^(easy|medium|hard)- ", text, re.M):
        return parse_tagged_bullets(text, file)
    return []


# Which parser reads which bundled document. Ids are "<doc>-<nn>".
PARSERS = {
    "000": parse_teasers,
    "002": parse_grill,
    "003": parse_tagged_bullets,
    "004": parse_question_list,
}
