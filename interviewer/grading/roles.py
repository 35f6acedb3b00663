"""A key point said with its roles swapped between its two clauses: "val loss keeps falling
while train loss turns up" for "train loss keeps falling while val loss turns up".

Sentence vectors and word overlap see the same words in both, and the term readings
(`substitution.py`) look for one term in the point's place. A point of two clauses binds
each of its terms to one clause: "train" goes with "falling", "val" with "turns up". Read
here: the sentence's clauses each mix words only one of the point's clauses says (its
*own* words), and the majority reading of the two clauses leaves a minority word of each
in the wrong clause. Those two words are the swapped roles when they stand in the same
slot of the point (next to the same word: "*train* loss", "*val* loss"; "too *low*", "too
*high*") or a rubric writer set them against each other (`substitutions.yaml`). Then the
sentence states the point turned round: a wrong claim, named with the point's two words
exchanged.

It is not read so when
- either of the point's clauses has fewer than `MIN_OWN` own words (one word decides
  nothing, and a list's items have no roles);
- a clause of the sentence says two or more own words of one of the point's clauses and
  none of the other's: the sentence keeps them apart, whatever else it mixes;
- the minority words are not in one slot (“the freed memory pays for bigger batches, longer
  sequences” for “larger batches, longer sequences or bigger models” crosses synonyms of
  a list, not roles);
- the sentence runs over `MAX_WORDS` words.

(Also measured and not needed: the term readings' guard that a sentence saying another point
at least as fully is that point's changes nothing on the data below.)

Chosen on the calibration split's written sentences (`evals/polarity/written.jsonl`):
reads 12 of the 158 swapped-roles sentences about key points, none of the other 1,018 wrong
ones, none of the 1,176 right ones, none of the bank's 1,523 phrasings said alone, no
reference answer's sentence and no point the expert marks covered in either split's answers
(`evals/GRADER_LOG.md`, rubric-29). Writers mostly swap roles in new words (“duplicate the
raw web crawl … and leave code and math at a single pass”), which this does not read.

Pure text: no model, no state.

    >>> point = ["train loss keeps falling while validation loss turns up"]
    >>> s = read_roles([point], ["Validation loss keeps falling while train loss flattens and turns up."])[0]
    >>> s.wrong_claim
    'validation loss keeps falling while train loss turns up'
    >>> read_roles([point], ["Validation loss turns up while the train loss keeps falling."])
    [None]
"""

from __future__ import annotations

import functools
import itertools
import re

from interviewer.grading.substitution import (
    Substitution,
    _alike,
    _is_content,
    opposed,
    tokens,
)

# A point's clause needs at least this many words the other clause does not say.
MIN_OWN = 2
MAX_WORDS = 50  # longer "sentences" (an unpunctuated transcript) are not read
# Words that open a clause of their own; a comma, semicolon, colon, dash or bracket also does.
OPENERS = frozenset("while whereas but whilst although though unlike versus vs because so then".split())
TWO_WORD_OPENERS = frozenset({("rather", "than"), ("instead", "of")})
_BREAK = re.compile(r"[,;:()—–]")
_CONTRAST = frozenset({"rather", "instead", "than"})


@functools.lru_cache(maxsize=16_384)
def _clauses(text: str) -> tuple[tuple[str, ...], ...]:
    """The text's clauses, each as its content stems.

    >>> _clauses("BN normalizes over the batch, whereas LN normalizes over features")
    (('bn', 'normal', 'over', 'batch'), ('ln', 'normal', 'over', 'featur'))
    """
    t = tokens(text)
    out: list[list[int]] = [[]]
    for j, word in enumerate(t.surface):
        if j:
            gap = t.text[t.spans[j - 1][1] : t.spans[j][0]]
            pair = (word, t.surface[j + 1]) if j + 1 < len(t.surface) else ("", "")
            if (word in OPENERS or pair in TWO_WORD_OPENERS or _BREAK.search(gap)) and out[-1]:
                out.append([])
        if _is_content(word) and word not in _CONTRAST and word not in OPENERS and len(t.stems[j]) > 1:
            out[-1].append(j)
    return tuple(tuple(t.stems[j] for j in c) for c in out if c)


def _said(word: str, pool: tuple[str, ...]) -> bool:
    return any(_alike(word, p) for p in pool)


def _own(x: tuple[str, ...], y: tuple[str, ...]) -> tuple[str, ...]:
    """The words of clause `x` that clause `y` does not say."""
    return tuple(w for w in dict.fromkeys(x) if not _said(w, y))


def _crossed(
    x: tuple[str, ...], y: tuple[str, ...], sentence: str
) -> list[tuple[frozenset[str], frozenset[str]]]:
    """Where two clauses of the sentence each mix own words of the point's clauses `x` and
    `y`: the words left in the wrong clause by the majority reading, (those of one sentence
    clause, those of the other)."""
    xs, ys = _own(x, y), _own(y, x)
    if len(xs) < MIN_OWN or len(ys) < MIN_OWN:
        return []
    said = [
        (frozenset(w for w in xs if _said(w, c)), frozenset(w for w in ys if _said(w, c)))
        for c in _clauses(sentence)
    ]
    if any((len(hx) >= 2 and not hy) or (len(hy) >= 2 and not hx) for hx, hy in said):
        return []  # a clause keeps the two apart
    out = []
    for (ax, ay), (bx, by) in itertools.combinations(said, 2):
        if ax and ay and bx and by and not ax & bx and not ay & by:
            straight, crossed = len(ax) + len(by), len(ay) + len(bx)
            if straight >= crossed:
                out.append((ay, bx))
            if crossed >= straight:
                out.append((ax, by))
    return out


def _neighbours(text: str, word: str) -> set[tuple[str, str]]:
    t = tokens(text)
    out = set()
    for n, s in enumerate(t.stems):
        if _alike(s, word):
            if n:
                out.add(("before", t.stems[n - 1]))
            if n + 1 < len(t.stems):
                out.add(("after", t.stems[n + 1]))
    return out


def _one_slot(phrasing: str, u: str, v: str) -> bool:
    """`u` and `v` fill one slot of the point: the same word stands next to both on the same
    side ("*train* loss", "*val* loss"), or a rubric writer set them against each other."""
    against = opposed()
    if any(len(o) == 1 and _alike(o[0], v) for o in against.get((u,), ())):
        return True
    return bool(_neighbours(phrasing, u) & _neighbours(phrasing, v))


def _exchanged(phrasing: str, u: str, v: str) -> str:
    """The phrasing with its words `u` and `v` (stems) exchanged, as written."""
    t = tokens(phrasing)
    i = next(n for n, s in enumerate(t.stems) if _alike(s, u))
    j = next(n for n, s in enumerate(t.stems) if _alike(s, v))
    (a0, a1), (b0, b1) = sorted([t.spans[i], t.spans[j]])
    w = t.written
    return w[:a0] + w[b0:b1] + w[a1:b0] + w[a0:a1] + w[b1:]


def _turned(phrasing: str, sentence: str) -> tuple[str, str] | None:
    """The two words the sentence swaps between the phrasing's clauses, or None."""
    for x, y in itertools.combinations(_clauses(phrasing), 2):
        for left, right in _crossed(x, y, sentence):
            for u, v in itertools.product(sorted(left), sorted(right)):
                if _one_slot(phrasing, u, v):
                    return u, v
    return None


def read_roles(points: list[list[str]], sentences: list[str]) -> list[Substitution | None]:
    """Per key point (its phrasings), a sentence of the answer that says it with its roles
    swapped between its clauses, or None."""
    found: list[Substitution | None] = []
    for phrasings in points:
        hit = None
        for phrasing, sentence in itertools.product(phrasings, sentences):
            if len(tokens(sentence).stems) > MAX_WORDS or len(_clauses(phrasing)) < 2:
                continue
            swap = _turned(phrasing, sentence)
            if swap is None:
                continue
            u, v = swap
            hit = Substitution(
                said=v, instead_of=u, sentence=sentence, wrong_claim=_exchanged(phrasing, u, v)
            )
            break
        found.append(hit)
    return found
