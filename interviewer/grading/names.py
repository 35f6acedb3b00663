"""Readings of the formats and stages a key point names ("fp16", "E4M3", "stage 1").

Sentence vectors put "the weight update is done in fp32" and "the weight update happens in fp16"
at one point, and word overlap counts every word but one as said. Yet in this field the name
is the claim: a point about one format said of another is a wrong claim. Three readings:

- `read_named_roles`: a clause that names a point's stage or format and says what *another*
  point of the rubric says of *another* one ("stage 3 finally shards the optimizer states",
  where stage 1's point says the optimizer states and stage 3's the parameters);
- `read_other_names`: a sentence that says a point's words with another format or stage in
  place of the point's one ("an FP64 instability" for "a numerical instability such as in
  FP16"), where no other point of the rubric is about that one and the answer never names the
  point's own;
- `read_number_roles`: a sentence that gives a point's numbers to each other's words ("E4M3 is
  three exponent bits and four mantissa bits" for "4 exponent and 3 mantissa bits").

(The guard that goes with them, that a span about another format is no evidence for a point
about this one, is `text.names_agree`, applied where the grader picks each point's evidence.)

Chosen on the calibration split's written sentences (`evals/polarity/written.jsonl`); see
`evals/GRADER_LOG.md`, rubric-31. Pure text: no model, no state.
"""

from __future__ import annotations

import itertools
import re

from interviewer.grading.substitution import Substitution, _Tokens, tokens
from interviewer.grading.text import (
    CLAUSE_BREAK,
    STOPWORDS,
    clean,
    content_stems,
    is_negated,
    names_agree,
    names_in,
    renamed,
    said_names,
)

# "and" or "but" left at a clause's start where a comma came first (", and stage 3 ...")
_LEADING_OPENER = re.compile(r"^(?:and|but|so|while|whereas|because|which)\s+", re.I)
# The other point's own words a clause must say to say that point (one word is a passing mention).
MIN_OTHERS = 2


def _named_subject(phrasing: str) -> str | None:
    """The one format or stage a point's text names ("stage 1", "fp16"), or None where it names
    none or several."""
    named = set(names_in(phrasing))
    return next(iter(named)) if len(named) == 1 else None


def _own_stems(phrasings: list[str]) -> set[str]:
    return {w for p in phrasings for w in content_stems(clean(p)) if not any(ch.isdigit() for ch in w)}


def read_named_roles(points: list[list[str]], sentences: list[str]) -> list[Substitution | None]:
    """Per key point (its phrasings), a clause of the answer that names the point's format or
    stage and says what another point says of another one, or None: "stage 3 finally shards the
    optimizer states" for "stage 1 shards the optimizer states" and "stage 3 also shards the
    parameters". Both points must each name one thing only; the clause names the point's and no
    other, says at least `MIN_OTHERS` words only the other point says and none only this one
    says, and is negated as the other point is ("bf16 needs no loss scaling" is not said by
    "fp16 needs loss scaling").

    >>> stages = [["stage 1 shards the optimizer states"], ["stage 3 also shards the parameters and gathers full weights"]]
    >>> read_named_roles(stages, ["Stage 1 shards the parameters with full weights gathered when needed."])[0].wrong_claim
    'stage 1 shards the parameters with full weights gathered when needed'
    >>> read_named_roles(stages, ["Stage 1 shards the optimizer states, stage 3 also the parameters."])
    [None, None]
    """
    subjects = [_named_subject(p[0]) if p else None for p in points]
    stems = [_own_stems(p) for p in points]
    found: list[Substitution | None] = [None] * len(points)
    for a, b in itertools.permutations(range(len(points)), 2):
        x, y = subjects[a], subjects[b]
        if x is None or y is None or x == y or found[a] is not None:
            continue
        mine, theirs = stems[a] - stems[b] - {x, y}, stems[b] - stems[a] - {x, y}
        if not mine or not theirs:
            continue
        denied = is_negated(points[b][0])
        for sentence, clause in ((s, c) for s in sentences for c in CLAUSE_BREAK.split(s)):
            if not clause.strip() or said_names(clause) != {x}:
                continue
            said = set(content_stems(clean(clause)))
            if len(said & theirs) >= MIN_OTHERS and not said & mine and is_negated(clause) == denied:
                found[a] = Substitution(
                    said=x,
                    instead_of=y,
                    sentence=sentence,
                    wrong_claim=_LEADING_OPENER.sub("", clause.strip()).rstrip(".!?").lower(),
                )
                break
    return found


# The names a swap reads: number formats and ZeRO stages, each one thing and no other.
_SWAPPABLE = re.compile(r"^(?:fp\d+|bf\d+|int\d+|tf32|e\dm\d|stage\d)$")
# The share of a point's other words a sentence must say to say the point with another name.
MIN_SHARE = 0.6


def read_other_names(
    points: list[list[str]], sentences: list[str], answer: str, question: str = ""
) -> list[Substitution | None]:
    """Per key point (its phrasings), a sentence of the answer that says the point's words with
    another format or stage in place of the one the point names, or None. Not read for a point
    that names several, nor where the answer names the point's own anywhere, another point of the
    rubric names the sentence's (the sentence may be that point), the question names the point's
    (the answer may leave it unsaid: "FP16 needs loss scaling?" "Yes, ..."), the sentence names more than
    one, says fewer than `MIN_SHARE` of the point's other words (and at least two), or is negated
    where the point is not.

    >>> point = [["can be a numerical instability such as in FP16"]]
    >>> said = "Could also be an FP64 numerical instability."
    >>> read_other_names(point, [said], said)[0].wrong_claim
    'can be a numerical instability such as in fp64'
    >>> said = "Could also be an FP64 numerical instability, or one in FP16."
    >>> read_other_names(point, [said], said)
    [None]
    """
    named_anywhere = said_names(answer) | said_names(question)
    subjects = [set(names_in(p[0])) if p else set() for p in points]
    found: list[Substitution | None] = [None] * len(points)
    for k, phrasings in enumerate(points):
        if len(subjects[k]) != 1:
            continue
        (x,) = subjects[k]
        if not _SWAPPABLE.match(x) or x in named_anywhere:
            continue
        words = {
            w for w in content_stems(clean(phrasings[0])) if w != x and not any(ch.isdigit() for ch in w)
        }
        if len(words) < 2:
            continue
        for sentence in sentences:
            said = said_names(sentence)
            if len(said) != 1:
                continue
            (y,) = said
            if y == x or not _SWAPPABLE.match(y) or y.startswith("stage") != x.startswith("stage"):
                continue
            if any(y in subjects[j] for j in range(len(points)) if j != k):
                continue  # the sentence may say that other point
            shared = set(content_stems(clean(sentence))) & words
            if len(shared) >= max(2, MIN_SHARE * len(words)) and is_negated(sentence) == is_negated(
                phrasings[0]
            ):
                wrong = renamed(clean(phrasings[0]), x, y)
                found[k] = Substitution(
                    said=y, instead_of=x, sentence=sentence, wrong_claim=wrong.lower(), needs_credit=False
                )
                break
    return found


# How far after a number the word it counts may stand ("4 exponent bits", "three to the exponent").
SLOT_REACH = 3


def _slot_after(t: _Tokens, i: int, words: frozenset[str] | None = None) -> str | None:
    """The word that the number at `i` counts: the first of `words` (any word but a stopword
    where `words` is None) within `SLOT_REACH` words after it, before another number."""
    for s in t.stems[i + 1 : i + 1 + SLOT_REACH]:
        if s[0].isdigit():
            return None
        if s in words if words is not None else s not in STOPWORDS:
            return s
    return None


def _slots(t: _Tokens, words: frozenset[str] | None = None) -> list[tuple[float, str]]:
    """(value, slot) for each whole number of `t` that counts one of `words` (`_slot_after`):
    "4 exponent" → (4.0, "expon")."""
    return [
        (float(w), slot)
        for i, w in enumerate(t.stems)
        if w[0].isdigit() and (slot := _slot_after(t, i, words)) is not None
    ]


def read_number_roles(points: list[list[str]], sentences: list[str]) -> list[Substitution | None]:
    """Per key point (its phrasings), a sentence that gives the point's numbers to each other's
    words, or None: "E4M3 has three exponent bits and four mantissa bits" for "E4M3 has 4
    exponent and 3 mantissa bits". The point's text must give two or more numbers, each to its
    own word; the sentence must agree with the point's names (`text.names_agree`) and give at
    least two of those words a number, every one of them another of the point's numbers.

    >>> point = [["E4M3 has 4 exponent and 3 mantissa bits, max about 448"]]
    >>> read_number_roles(point, ["E4M3: three exponent bits, four mantissa bits, max 448."])[0].wrong_claim
    'e4m3 has 3 exponent and 4 mantissa bits, max about 448'
    >>> read_number_roles(point, ["E4M3 has four exponent and three mantissa bits."])
    [None]
    >>> read_number_roles(point, ["E4M3 is three exponent and four mantissa bits, E5M2 five and two."])[0].said
    '3, 4'

    """
    found: list[Substitution | None] = [None] * len(points)
    for k, phrasings in enumerate(points):
        if not phrasings:
            continue
        claim = tokens(phrasings[0])
        given = dict((slot, value) for value, slot in _slots(claim))
        slot_words = frozenset(given)
        if len(given) < 2 or len(set(given.values())) < len(given):
            continue  # fewer than two numbers, each with its own word
        for sentence, part in ((s, part) for s in sentences for part in _by_name(s)):
            if not names_agree(phrasings, part):
                continue
            said = [(v, s) for v, s in _slots(tokens(part), slot_words) if s in given]
            if len({s for _, s in said}) < 2:
                continue
            if all(v != given[s] and v in given.values() for v, s in said):
                wrong = _renumbered(clean(phrasings[0]), {given[s]: v for v, s in said})
                found[k] = Substitution(
                    said=", ".join(_format(v) for v, _ in said),
                    instead_of=", ".join(_format(given[s]) for _, s in said),
                    sentence=sentence,
                    wrong_claim=wrong.lower(),
                )
                break
    return found


def _by_name(sentence: str) -> list[str]:
    """The sentence cut before each format or stage it names after its first: what is said of
    each ("E4M3 is four exponent bits and three mantissa bits, and | E5M2 is five and two")."""
    t = tokens(sentence)
    starts = [  # where a name begins: "e4m3", "stage" of "stage 2"
        i
        for i in range(len(t.surface))
        if said_names(" ".join(t.surface[i : i + 2])) - said_names(" ".join(t.surface[i + 1 : i + 2]))
    ]
    cuts = [0, *(i for i in starts[1:]), len(t.stems)] if starts else [0, len(t.stems)]
    return [t.text[t.spans[a][0] : t.spans[b - 1][1]] for a, b in itertools.pairwise(cuts) if b > a]


def _format(value: float) -> str:
    return f"{value:g}"


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _renumbered(text: str, swap: dict[float, float]) -> str:
    """`text` with each whole number that `swap` holds replaced by its value there."""
    return _NUMBER.sub(lambda m: _format(swap.get(float(m[0]), float(m[0]))), text)
