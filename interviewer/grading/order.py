"""Which way round a sentence says "A, not B" when its wrong twin is "B, not A".

"near-zero gradient norm usually means vanishing gradients, not convergence" and its
twin "near-zero gradient norm usually means convergence, not vanishing gradients" hold
the same words, so sentence vectors put them at one point and word overlap cannot
choose. Where the twin only swaps two terms around a negation or contrast ("A, not B",
"A rather than B", "A instead of B"; 7 of the bank's twins), the order says which term is
affirmed, however the rest of the sentence is worded: a sentence that says both terms
with a contrast between them is read against the claim and against the twin as
sequences of content stems, and it says the one it shares the longer common subsequence
with. A negation is kept as a word of its own ("isn't" reads "not").

Other reorderings are not read. In "use E4M3 for forward weights, E5M2 for gradients" the
order of the two formats depends on the sentence's syntax ("forward weights go in E4M3")
and a right sentence reads as its twin (measured on the calibration split's written
sentences and on the minimal-pair probe; `evals/GRADER_LOG.md`, rubric-21). Nor is a
sentence that denies first ("it's not convergence, it's vanishing gradients"), which says
the claim in the twin's order.

Pure text: no model, no state. `order_lean` is None where it does not apply (the twin
is not such a swap, or the sentence does not say both terms with a contrast between them).

    >>> claim = "near-zero gradient norm usually means vanishing gradients, not convergence"
    >>> twin = "near-zero gradient norm usually means convergence, not vanishing gradients"
    >>> order_lean(claim, twin, "A norm near zero is usually convergence, not vanishing gradients.")
    -2
    >>> order_lean(claim, twin, "A near-zero gradient norm usually means the gradients are vanishing rather than convergence.")
    2
    >>> order_lean(claim, twin, "The loss went flat.") is None
    True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from interviewer.grading.text import NEGATION, clean, word_stems, words

NEGATION_STEM = "not"
# Read as one word: "A, not B", "A rather than B", "A instead of B" and "never B" deny alike.
CONTRAST_WORDS = frozenset({"not", "no", "never", "rather", "instead"})
# A sentence is read only when it says at least this share of the claim's stems in the
# claim's or the twin's order: one that says the point in words of its own ("the new data
# makes up the bulk, with old data filling the last 5 to 15 percent") may put the same
# terms in another order and mean the same. Chosen on the calibration split's graded answers
# and its written and spoken sentences (`evals/polarity/`): at 0.6 every sentence read about
# the seven contrast swaps is read the right way round.
MIN_SAID = 0.6
# Longer "sentences" are not read: a transcript with no punctuation is one sentence, in
# which the two terms can stand in any order far apart.
MAX_WORDS = 40


@functools.lru_cache(maxsize=16_384)
def _stems_at(text: str) -> tuple[tuple[str, int], ...]:
    """(stem, where it starts in `clean(text)`) of each content word, negations and
    contrasts ("rather", "instead") as "not"."""
    cleaned = clean(text)
    out = []
    for start, end, term in word_stems(cleaned):
        low = cleaned[start:end].lower()
        if low.endswith("n't") or low in CONTRAST_WORDS:
            out.append((NEGATION_STEM, start))
        elif term is not None and (end - start > 1 or low.isdigit()):
            out.append((term, start))
    return tuple(out)


def order_stems(text: str) -> tuple[str, ...]:
    """Content stems in order, with every negation or contrast as the word "not".

    >>> order_stems("It isn't convergence; the gradients are vanishing.")
    ('not', 'convergenc', 'gradient', 'vanish')
    """
    return tuple(term for term, _ in _stems_at(text))


def _denies_first(text: str, moved: frozenset[str]) -> bool:
    """A negation or contrast ("not", "instead of", "rather than", "avoid") comes before the
    first of the swapped terms: "instead of FP16, use BF16" says its terms the other way
    round from "use BF16 instead of FP16" and means the same."""
    first = next((at for term, at in _stems_at(text) if term in moved), None)
    denial = NEGATION.search(clean(text))
    return first is not None and denial is not None and denial.start() < first


def _contrasted(text: str, moved: frozenset[str]) -> bool:
    """A negation or contrast stands between the first swapped term said and the next one
    ("batch size" is one term): "A, not B", "A rather than B", "A instead of B". In such a
    frame the order alone says which is affirmed; in "use A for X, B for Y" (said also "X in
    A, Y in B") it does not."""
    stems = _stems_at(text)
    first = next((n for n, (term, _) in enumerate(stems) if term in moved), None)
    if first is None:
        return False
    run = first
    while run + 1 < len(stems) and stems[run + 1][0] in moved:
        run += 1  # the rest of the first term
    end = next((at for term, at in stems[run + 1 :] if term in moved), None)
    return end is not None and NEGATION.search(clean(text), stems[first][1], end) is not None


def is_reordering(claim: str, twin: str) -> bool:
    """The twin says the claim's words in another order (swapped roles), nothing else.

    >>> is_reordering("train in BF16 rather than FP16", "train in FP16 rather than BF16")
    True
    >>> is_reordering("the learning rate is too low", "the learning rate is too high")
    False
    """
    a, b = order_stems(claim), order_stems(twin)
    return a != b and sorted(a) == sorted(b)


@functools.lru_cache(maxsize=4096)
def is_contrast_swap(claim: str, twin: str) -> bool:
    """The twin swaps two terms of the claim around a negation or contrast ("A, not B").

    >>> is_contrast_swap("train in BF16 rather than FP16", "train in FP16 rather than BF16")
    True
    >>> is_contrast_swap("use E4M3 for weights, E5M2 for gradients", "use E5M2 for weights, E4M3 for gradients")
    False
    """
    return is_reordering(claim, twin) and _contrasted(claim, _moved(claim, twin))


@functools.lru_cache(maxsize=4096)
def _moved(claim: str, twin: str) -> frozenset[str]:
    """The terms the twin swaps: stems standing in different places in the two, less those
    that also stand in the same place somewhere ("gradient" in "gradient norm ... vanishing
    gradients") and negations."""
    a, b = order_stems(claim), order_stems(twin)
    moved = {x for x, y in zip(a, b, strict=True) if x != y}
    kept = {x for x, y in zip(a, b, strict=True) if x == y} | {NEGATION_STEM}
    return frozenset(moved - kept) or frozenset(moved - {NEGATION_STEM})


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Length of the longest common subsequence."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b):
            prev, row[j + 1] = row[j + 1], prev + 1 if x == y else max(row[j + 1], row[j])
    return row[-1]


def order_lean(claim: str, twin: str, sentence: str) -> int | None:
    """How many more of the claim's stems the sentence says in the claim's order than in
    the twin's: > 0 it says the claim, < 0 the twin, 0 either. None: the twin is not a
    contrast swap of the claim; or the sentence does not say every term the two swap, has
    no contrast between them, denies first where the claim does not, says less than
    `MIN_SAID` of the claim in either order, or runs over `MAX_WORDS` words."""
    if not is_contrast_swap(claim, twin):
        return None
    if len(words(sentence)) > MAX_WORDS:
        return None
    a, b = order_stems(claim), order_stems(twin)
    moved = _moved(claim, twin)
    vocabulary = set(a)
    said = tuple(s for s in order_stems(sentence) if s in vocabulary)
    if not moved <= set(said) or _denies_first(sentence, moved) != _denies_first(claim, moved):
        return None
    if not _contrasted(sentence, moved):
        return None
    claim_order, twin_order = _common(said, a), _common(said, b)
    if max(claim_order, twin_order) < MIN_SAID * len(a):
        return None
    return claim_order - twin_order


@dataclass(frozen=True)
class OrderReading:
    """Which way round an answer says a claim whose twin is its contrast swap, and where."""

    lean: int  # > 0: the claim's way round; < 0: its twin's (`order_lean`)
    sentence: str  # the answer's sentence that says it so, verbatim


def read_order(claim: str, twin: str | None, sentences: list[str]) -> OrderReading | None:
    """The answer's reading of a claim: the sentence that says it the claim's way round most
    clearly; failing any, the one that says it the twin's way most clearly; None when no
    sentence leans either way (or the twin is not a contrast swap).

    >>> claim, twin = "train in BF16 rather than FP16", "train in FP16 rather than BF16"
    >>> read_order(claim, twin, ["Train in FP16 instead of BF16.", "It is cheap."])
    OrderReading(lean=-2, sentence='Train in FP16 instead of BF16.')
    >>> read_order(claim, twin, ["Instead of FP16, train in BF16.", "Never FP16 rather than BF16."]) is None
    True
    """
    if not twin or not is_contrast_swap(claim, twin):
        return None
    leans = [(lean, s) for s in sentences if (lean := order_lean(claim, twin, s))]
    if not leans:
        return None
    lean, sentence = max(leans) if max(leans)[0] > 0 else min(leans)
    return OrderReading(lean=lean, sentence=sentence)
