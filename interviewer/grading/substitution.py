"""A key point said with one of its terms swapped for its opposite: "weight decay" where it says
"gradient clipping", "higher" where it says "lower", "100" where it says "1.0".

Sentence vectors put "make sure gradient clipping is on" and "make sure weight decay is on"
at nearly one point, and word overlap counts every other word as said. Read here instead:
a sentence that says the point's own words in the point's order (at least `MIN_ALIGNED` of
its content words outside the term) and, where the point's term stands, a term the bank's
own minimal pairs set against it (`substitutions.yaml`) or another number, states the point
with that term swapped: a wrong claim. It is not read so when
- the answer says the point's own term anywhere ("clip gradients; weight decay does not
  help here" is right);
- the term is another of the question's points' own ("running mean" belongs to the
  inference point, not to the training point's "mini-batch mean"), or the sentence says
  another point more fully;
- the term stands at the point's very start, its subject ("bf16 keeps fp32's range" is
  another claim about another format, not "fp16 keeps ..." said wrong);
- a negation stands next to it and not next to the point's term ("don't raise the learning
  rate"), or the clause holding it holds too few of the point's words ("store activations
  at layer boundaries and recompute the rest during the backward pass" does not say where
  the point's "forward pass" stands);
- the speaker takes the term back ("make sure weight decay, sorry, clipping is on");
- a number agrees: the same rounded, inside a range the point gives, the same share as a
  percentage, 0 and 1 after a counter ("step one" for "step zero"), or the digit is part of
  a larger number as the grader reads numbers ("4 × 10⁵").

A point's number is also read in any word order, where the word-order reading finds nothing:
a sentence that says most of the point's words and, next to one of the words around the
point's number ("norm", "decay", "bytes"), another number says that number for the point's
("clip the gradient norm at 100" for "use gradient clipping with max norm 1.0"; "decay around
0.5 to 0.9" for "the decay is typically 0.999 to 0.9999"). Not when the number counts something
else ("ten classes", "another 10 to 20 epochs" for "after epoch 5"), is a ratio ("1 in 10"),
is the point's said roughly ("around 57,000" for 57,344) or a number it gives elsewhere, is
denied or taken back, or the answer says the point's number somewhere; nor for a point whose
number is an example ("for example 4 micro-batches of 8") or a step of a sum or a formula
("7 billion x 2 bytes = 14 GB": the grader's numeric check reads the answer's number).

A term the bank sets against the point's is read in any word order too, where neither reading
above finds anything: "stop where the *train* loss bottoms out" for "early stopping at the
*validation* minimum", "NaN loss: LR too *low*" for "Loss exploding to NaN points to LR too
high". The term must stand next to a word that stands by the point's term (for "before",
"after", "above", "below", "over", "under": the word each governs), with the guards above.
Two of the point's terms said the other way round is the point turned round, not a swap ("a
smaller batch needs a lower learning rate" for "a larger batch allows a higher learning
rate"), in either reading.

The opposed terms are data, not judgement: `evals/build_substitutions.py` collects them from
the rubric's twins and the written wrong versions of its key points, where a rubric writer
set one term against another, and leaves out hedges and numbers (read as numbers here). An
absolute where the point hedges is an over-general claim, read as a term against the hedges it
overstates (`overstated` in cues.yaml: "always" for "usually", "never" for "rarely"), except
when softened ("almost always" hedges as "usually" does).

Pure text: no model, no state.

    >>> s = read_substitution(
    ...     "make sure gradient clipping is on",
    ...     "First, make sure weight decay is on, so one bad batch can't move the weights.",
    ...     answer="First, make sure weight decay is on, so one bad batch can't move the weights.",
    ... )
    >>> s.said, s.instead_of, s.wrong_claim
    ('weight decay', 'gradient clipping', 'make sure weight decay is on')
    >>> read_substitution("make sure gradient clipping is on", "Make sure gradient clipping is on.",
    ...                   answer="Make sure gradient clipping is on.") is None
    True
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from interviewer import cues
from interviewer.cues import SAFE_LOADER
from interviewer.grading.numbers import extract_quantities, multiples, same_value
from interviewer.grading.text import STOPWORDS, clean, names_agree, stem

LEXICON_FILE = Path(__file__).with_name("substitutions.yaml")
# The sentence must say at least this share of the point's content words (those outside the
# swapped term) in the point's order: it says this point, not another one that shares a term.
MIN_ALIGNED = 0.5
# and at least this many of them: one shared word makes no claim, unless the point has only
# two content words, the sentence says the other one, and a word it aligns with the point
# stands right next to the term ("drift upward" for "drifts downward", "the LR's too low"
# for "LR too high")
MIN_ALIGNED_WORDS = 2
MAX_TERM = 3  # words in a swapped term ("optimizer states", "sgd with momentum")
MAX_WORDS = 50  # longer "sentences" (an unpunctuated transcript) are not read
COUNTERS = frozenset({"step", "epoch", "iteration", "iter"})  # stems
NEGATION_REACH = 3  # words either side of a term where a "not" governs it ("don't raise", "isn't on")
ROUNDING = 0.005  # numbers this close (relative) are one number rounded
REACH = 4  # words before the first and after the last aligned word where the swapped term may stand
# Stopwords that carry a claim's direction count as content words here ("above", "before").
DIRECTION = frozenset(
    "more less fewer above below up down before after further over under few off on out same".split()
)
# Words that open a clause of their own: a swapped term must stand in a clause that says the
# point's words too ("store activations at layer boundaries and recompute the rest during the
# backward pass" says nothing of where the point's "forward pass" stands).
CLAUSE_OPENERS = frozenset("and but because which so while whereas since although though".split())
NEGATIONS = frozenset("not no never nor without cannot".split())
# A number read in any word order: the words this far either side of it say what it is a
# number of ("clip the gradient *norm* at 100"). Chosen on the calibration split's written
# sentences (`evals/polarity/written.jsonl`): this reading alone reads 30 / 35 / 36 / 36 of
# the 131 that give a point a wrong number at 2 / 3 / 4 / 6 words, and none of the 1,176 right.
NUMBER_REACH = 4
NUMBER_HEDGES = frozenset(stem(w) for w in cues.number_hedges())
# A term read in any word order: the words this far either side of it say what it is about
# ("raise the *learning rate*"). Chosen on the same written sentences: this reading alone reads
# 102 / 129 / 132 of their 1,176 wrong sentences at 2 / 3 / 4 words, and 0 / 2 / 3 of the
# 1,176 right ones (the 2 at 3 words are the ones the word-order reading reads too).
TERM_REACH = 3
# Prepositions of order and place: what they are about is the word they govern ("before the
# *optimizer* step"), not any word near them ("after backward you *unscale*").
GOVERNING = frozenset({"after", "befor", "abov", "below", "over", "under"})
APPROXIMATE = 0.05  # a number this close (relative) to the point's is the point's, said roughly
_RANGE_JOIN = re.compile(
    r"\s*(?:%\s*)?(?:-|–|to)?\s*(?:(?:like|maybe|about|around)\s+)?"
)  # "5 to 15", "5-15", "10 to like 20"
_RATIO = frozenset({"in", "out"})  # "1 in 10", "one out of ten": a ratio, not a count
_TOKEN = re.compile(r"[a-z][a-z0-9']*|\d+(?:\.\d+)?(?:e-?\d+)?|%")
_INNER_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")

Phrase = tuple[str, ...]


@dataclass(frozen=True)
class Substitution:
    """A point said with one term swapped: what the sentence says and where."""

    said: str  # the sentence's term, as written ("weight decay")
    instead_of: str  # the point's term it stands for ("gradient clipping")
    sentence: str  # the answer's sentence, verbatim
    wrong_claim: str  # the point as the sentence says it ("make sure weight decay is on")
    # counts only where the point's words earn it credit; a reading whose sentence the grader
    # already refuses as evidence (another format's name: `text.names_agree`) sets its own bar
    needs_credit: bool = True


@dataclass(frozen=True)
class _Tokens:
    source: str  # as given
    text: str  # cleaned, lower case, inner hyphens as spaces
    written: str  # the same with its inner hyphens ("mini-batch"): what a quoted claim shows
    stems: Phrase
    spans: tuple[tuple[int, int], ...]  # (start, end) of each token in `text`
    surface: tuple[str, ...]


@functools.lru_cache(maxsize=16_384)
def tokens(text: str) -> _Tokens:
    """Every word and number of the cleaned text, stemmed ("training-loss" is two words).

    >>> tokens("The training-loss minimum, at 16,384 steps.").stems
    ('the', 'train', 'loss', 'minimum', 'at', '16384', 'step')
    """
    lowered = clean(text, determiners=True).lower()
    cleaned = _THOUSANDS.sub("", _INNER_HYPHEN.sub(" ", lowered))  # a hyphen for a space: spans hold
    found = list(_TOKEN.finditer(cleaned))
    # "the LR's too low" says "LR": a possessive or "is" comes off its word
    words = [m.group()[:-2] if m.group().endswith("'s") else m.group().rstrip("'") for m in found]
    return _Tokens(
        source=text,
        text=cleaned,
        written=_THOUSANDS.sub("", lowered),
        stems=tuple(stem(w) for w in words),
        spans=tuple(m.span() for m in found),
        surface=tuple(words),
    )


@functools.cache
def opposed() -> dict[Phrase, frozenset[Phrase]]:
    """Per stem phrase, the phrases a rubric writer set against it, and the hedges an absolute
    overstates (`overstated` in cues.yaml); read both ways round."""
    data = yaml.load(LEXICON_FILE.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    pairs = [(a.split(), b.split()) for a, b in data["pairs"]]
    pairs += [(tokens(a).stems, tokens(h).stems) for a, hs in cues.overstated()[0].items() for h in hs]
    against: dict[Phrase, set[Phrase]] = {}
    for a, b in pairs:
        x, y = tuple(a), tuple(b)
        against.setdefault(x, set()).add(y)
        against.setdefault(y, set()).add(x)
    return {k: frozenset(v) for k, v in against.items()}


@functools.cache
def _hedges() -> frozenset[str]:
    """The stems of every absolute and hedge of `overstated` in cues.yaml."""
    absolutes, _ = cues.overstated()
    return frozenset(tokens(w).stems[0] for a, hs in absolutes.items() for w in (a, *hs))


@functools.cache
def _softeners() -> tuple[frozenset[Phrase], tuple[Phrase, ...]]:
    """(the absolutes, the words that soften them), as stem phrases, of `overstated` in cues.yaml."""
    absolutes, softeners = cues.overstated()
    return frozenset(tokens(a).stems for a in absolutes), tuple(tokens(w).stems for w in softeners)


def _softened(sentence: _Tokens, b0: int, b1: int) -> bool:
    """The term at `b0`..`b1` is an absolute said softly: "almost always" hedges as "usually" does."""
    absolutes, softeners = _softeners()
    if sentence.stems[b0:b1] not in absolutes:
        return False
    return any(sentence.stems[max(0, b0 - len(w)) : b0] == w for w in softeners)


@functools.cache
def _opposed_words() -> frozenset[str]:
    return frozenset(w for phrase in opposed() for w in phrase)


def _may_swap(claim: _Tokens, sentence: _Tokens) -> bool:
    """Cheap necessary conditions, before any alignment: the two share enough content words,
    and each says an opposed word or a number."""
    words = _opposed_words()
    shared = {w for w, sw in zip(claim.stems, claim.surface, strict=True) if _is_content(sw)}
    if len(shared & set(sentence.stems)) < min(MIN_ALIGNED_WORDS, len(shared) - 1):
        return False
    return all(any(w in words or _is_number(w) for w in t.stems) for t in (claim, sentence))


def _is_content(word: str) -> bool:
    return word not in STOPWORDS or word in DIRECTION


_TAKEN_BACK = cues.pattern("term_taken_back")
_DIAGNOSIS = cues.pattern("diagnosis")
_EXAMPLE = cues.pattern("number_example")
_ARITHMETIC = re.compile(r"[+=×*/^]|\b(?:times|plus|minus|x|sqrt|cos|sin|log|ln|exp)\b", re.I)


def _taken_back(sentence: _Tokens, after: int) -> bool:
    """A take-back cue ("sorry", "I mean", "wait") stands after the word at `after`: what came
    before it is taken back ("make sure weight decay, sorry, clipping is on")."""
    return bool(_TAKEN_BACK.search(sentence.text[sentence.spans[after - 1][1] :]))


def _is_negation(word: str) -> bool:
    return word.endswith("n't") or word in NEGATIONS


def _is_number(word: str) -> bool:
    return word[0].isdigit()


def _holds(sequence: Phrase, phrase: Phrase) -> bool:
    """`phrase` stands in `sequence`, word for word."""
    return f" {' '.join(phrase)} " in _joined(sequence)


@functools.lru_cache(maxsize=16_384)
def _joined(sequence: Phrase) -> str:
    return f" {' '.join(sequence)} "


def _same_number(a: str, b: str, shares: bool = False) -> bool:
    """Equal, or the same rounded ("2.303" for "2.3026"); with `shares` (one of the two is a
    percentage), also the same share ("10 %" for "0.1")."""
    x, y = float(a), float(b)
    scales = (y, y * 100, y / 100) if shares else (y,)
    return any(same_value(x, v) or abs(x - v) <= ROUNDING * max(abs(x), abs(v)) for v in scales)


_WORD_MULTIPLIERS = (1.0, 1e3, 1e6, 1e9, 1e12)  # "7 billion" is read as 7e9


@functools.lru_cache(maxsize=16_384)
def _whole_numbers(text: str) -> frozenset[float]:
    """The numbers the grader's number reader finds in `text`, as written before any word
    multiplier: "4 × 10⁵" is 4e5, so its "4" is no number of its own."""
    values = [q.value for q in extract_quantities(clean(text, determiners=True))]
    return frozenset(round(v / m, 9) for v in values for m in _WORD_MULTIPLIERS)


def _percent(stems: Phrase, at: int) -> bool:
    return at < len(stems) and stems[at] in ("%", "percent")


def _runs(positions: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for p in positions:
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _pieces(run: list[int]) -> list[tuple[int, int]]:
    """Every stretch of at most MAX_TERM positions inside a run, as (start, end)."""
    return [(s, e) for s in run for e in range(s + 1, min(s + MAX_TERM, run[-1] + 1) + 1)]


def _number_swap(
    a: str, b: str, claim: Phrase, answer: Phrase, label: str = "", shares: bool = False
) -> bool:
    """`b` said where the claim says `a`: another number, not the claim's own nor inside a
    range the claim gives ("10 percent" states "5 to 15 percent"), and the answer nowhere
    says `a`. After a counter ("step", "epoch"), 0 and 1 are both the start: "from step
    one" says "at step zero"."""
    if label in COUNTERS and {float(a), float(b)} <= {0.0, 1.0}:
        return False
    said = [float(w) for w in claim if _is_number(w)]
    if any(_same_number(b, n, shares) for n in claim if _is_number(n)) or min(said) <= float(b) <= max(said):
        return False
    return not any(_same_number(w, a, shares) for w in answer if _is_number(w))


def _swap(
    claim: _Tokens, sentence: _Tokens, answer: _Tokens, point: frozenset[str], own_numbers: frozenset[str]
) -> tuple[float, int, int, int, int] | None:
    """(aligned share, claim term start, end, sentence term start, end) of the best swap.
    `point`: the stems of every phrasing of the point; a sentence term among them is no swap.
    `own_numbers`: every number the point's phrasings give; a sentence number among them is none."""
    if not _may_swap(claim, sentence):
        return None
    x, y = claim.stems, sentence.stems
    matcher = difflib.SequenceMatcher(None, x, y, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return None
    in_claim = {b.a + k for b in blocks for k in range(b.size)}
    in_sentence = {b.b + k for b in blocks for k in range(b.size)}
    lo, hi = blocks[0].b - REACH, blocks[-1].b + blocks[-1].size - 1 + REACH
    claim_gaps = _runs([i for i in range(len(x)) if i not in in_claim])
    sentence_gaps = _runs([j for j in range(len(y)) if j not in in_sentence and lo <= j <= hi])
    content = [i for i, w in enumerate(claim.surface) if _is_content(w)]
    # the point's subject (its first content word), and a number right after it ("stage 2")
    first = _subject(claim)
    subject = {first, first + 1} if first + 1 < len(x) and _is_number(x[first + 1]) else {first}
    pairs = opposed()
    # the gap a word stands in: how many aligned stretches end before it. A swapped term
    # stands where the claim's term stands: in the same gap, or in the next one across a
    # single aligned word ("with lower weights" / "weighted higher than")
    claim_gap = [sum(b.a + b.size <= i for b in blocks) for i in range(len(x))]
    sentence_gap = [sum(b.b + b.size <= j for b in blocks) for j in range(len(y))]
    single = {n + 1 for n, b in enumerate(blocks) if b.size == 1}
    clause = _clauses(sentence)
    in_clause = Counter(clause[j] for j in in_sentence if _is_content(sentence.surface[j]))
    # a clause must hold two of the point's words; a two-word point's sentence may hold only one
    clause_words = min(2, sum(in_clause.values()))

    def negated(surface: tuple[str, ...], start: int, end: int, same: list[int] | None = None) -> bool:
        """A negation within NEGATION_REACH words of the term (in its clause)."""
        near = range(max(0, start - NEGATION_REACH), min(len(surface), end + NEGATION_REACH))
        return any(_is_negation(surface[j]) and (same is None or same[j] == same[start]) for j in near)

    best = None
    for a0, a1 in (p for run in claim_gaps for p in _pieces(run)):
        if a0 in subject:
            continue  # the point's subject: another subject is another claim, not this one said wrong
        a = x[a0:a1]
        against = pairs.get(a, frozenset())
        is_number = len(a) == 1 and _is_number(a[0])
        if not (against or is_number) or _holds(answer.stems, a):
            continue  # no term set against it; or the answer says the point's own term somewhere
        for b0, b1 in (p for run in sentence_gaps for p in _pieces(run)):
            b = y[b0:b1]
            numbers = is_number and len(b) == 1 and _is_number(b[0])
            if not numbers and b not in against:
                continue
            if b0 == 0 and sentence.text[sentence.spans[0][1] : sentence.spans[0][1] + 1] == ",":
                continue  # a discourse word: "First, restore the checkpoint" says no "first"
            if _holds(x, b) or set(b) <= point:
                continue
            if _taken_back(sentence, b1):
                continue  # "it normalizes over the features, wait, I mean the batch": taken back
            if _softened(sentence, b0, b1):
                continue  # "almost always" for "usually": a hedge too
            if in_clause[clause[b0]] < clause_words:
                continue  # the term stands in a clause of its own, not in one that says the point
            if negated(sentence.surface, b0, b1, clause) != negated(claim.surface, a0, a1):
                continue  # "not weight decay" is no claim that weight decay does it
            ga, gb = claim_gap[a0], sentence_gap[b0]
            if not (ga == gb or (abs(ga - gb) == 1 and max(ga, gb) in single)):
                continue
            if numbers:
                # a number stands in the claim's own slot: between the same aligned stretches,
                # one of them ending or starting with a content word next to it ("max norm
                # 1.0" / "max norm of 100"; "from 0" / "from step 1" is no slot)
                before = ga > 0 and _is_content(claim.surface[blocks[ga - 1].a + blocks[ga - 1].size - 1])
                after = ga < len(blocks) and _is_content(claim.surface[blocks[ga].a])
                label = x[a0 - 1] if a0 else ""
                shares = _percent(x, a1) != _percent(y, b1)
                whole = round(float(a[0]), 9) in _whole_numbers(claim.source) and round(
                    float(b[0]), 9
                ) in _whole_numbers(sentence.source)
                if ga != gb or not ((before or after) and whole):
                    continue
                if not _number_swap(a[0], b[0], x, answer.stems, label, shares):
                    continue
                if _ratio(sentence, b0) or any(
                    _agrees(float(b[0]), float(n), shares, ROUNDING) for n in own_numbers
                ):
                    continue  # "1 in 10 tokens" is a tenth, not 1; "two forward passes" is the point's "twice"
            rest = [i for i in content if not a0 <= i < a1]
            said = sum(i in in_claim for i in rest)
            share = said / max(len(rest), 1)
            # a two-word point ("drifts downward") is said with its other word, and an aligned
            # word stands right next to the term
            short = said == len(rest) == 1 and any(abs(j - k) == 1 for j in in_sentence for k in (b0, b1 - 1))
            if (
                share >= MIN_ALIGNED
                and (said >= MIN_ALIGNED_WORDS or short)
                and (best is None or share > best[0])
            ):
                best = (share, a0, a1, b0, b1)
    return best


def _clauses(sentence: _Tokens) -> list[int]:
    """Per word, the number of its clause in the sentence (a clause opener starts the next)."""
    return _stretches(sentence, lists=False)


_LIST_BREAK = re.compile(r"[,;:()—]")


def _items(t: _Tokens) -> list[int]:
    """Per word, the number of its stretch: clauses, and the items of a list ("beta2 0.9999,
    clip at 100"), so that a number's words are read inside its own item."""
    return _stretches(t, lists=True)


def _stretches(t: _Tokens, lists: bool) -> list[int]:
    """Per word, the number of its stretch: a clause opener starts the next, and with `lists`
    so does a comma, colon, dash or bracket before the word."""
    stretch = [0] * len(t.stems)
    for j in range(1, len(t.stems)):
        gap = t.text[t.spans[j - 1][1] : t.spans[j][0]]
        breaks = t.surface[j] in CLAUSE_OPENERS or (lists and bool(_LIST_BREAK.search(gap)))
        stretch[j] = stretch[j - 1] + breaks
    return stretch


def _ratio(t: _Tokens, j: int) -> bool:
    """The number at `j` opens a ratio: "1 in 10", "one out of ten"."""
    return j + 2 < len(t.stems) and t.stems[j + 1] in _RATIO


def _alike(a: str, b: str) -> bool:
    """One word, though the crude stemmer may leave two forms apart ("clipp" / "clip")."""
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def _met(words: Iterable[str], others: Iterable[str]) -> set[str]:
    """The `words` that `others` say, as `_alike` reads words (by prefixes, for speed)."""
    pool = set(others)
    prefixes = {o[:k] for o in pool if len(o) >= 4 for k in range(4, len(o) + 1)}

    def said(w: str) -> bool:
        return w in pool or (len(w) >= 4 and (w in prefixes or any(w[:k] in pool for k in range(4, len(w)))))

    return {w for w in words if said(w)}


@functools.lru_cache(maxsize=16_384)
def _topic_words(t: _Tokens) -> frozenset[str]:
    """A phrasing's content words besides its numbers and the hedges around them."""
    return frozenset(
        {
            w
            for w, sw in zip(t.stems, t.surface, strict=True)
            if _is_content(sw) and not _is_number(w) and w != "%" and w not in NUMBER_HEDGES
        }
    )


def _bag_share(claim: str, sentence: str) -> float:
    """The share of the claim's topic words the sentence says, in any order."""
    words = _topic_words(tokens(claim))
    return len(_met(words, tokens(sentence).stems)) / max(len(words), 1)


def _identifier(word: str) -> bool:
    """A name with digits in it: "e5m2", "bf16", "beta2"."""
    return any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word)


def _unit(t: _Tokens, i: int) -> str:
    """The content word right after the number at `i`, what it counts ("bytes", "classes");
    "" when a list goes on after it ("beta2 0.9999, clip at 100")."""
    k = i + 1
    if k >= len(t.stems) or any(p in t.text[t.spans[i][1] : t.spans[k][0]] for p in ",;:"):
        return ""
    if _percent(t.stems, k):
        return "%"
    return t.stems[k] if _is_content(t.surface[k]) and not _is_number(t.stems[k]) else ""


def _near(t: _Tokens, start: int, end: int, item: list[int], reach: int) -> set[str]:
    """The words within `reach` of the stretch [start, end), inside its clause or list item
    (`_items`): what a number counts or what a term is about."""
    around = range(max(0, start - reach), min(len(t.stems), end + reach))
    return {t.stems[k] for k in around if item[k] == item[start] and not start <= k < end}


def _subject(claim: _Tokens) -> int:
    """Where the claim's subject stands: its first content word that is not a hedge or an
    absolute ("usually a bad batch of data": "bad batch")."""
    hedges = _hedges()
    return next(
        (k for k, w in enumerate(claim.surface) if _is_content(w) and claim.stems[k] not in hedges), 0
    )


def _says_enough(said: set[str], words: Iterable[str]) -> bool:
    """The sentence says at least MIN_ALIGNED of the claim's topic words, and at least
    MIN_ALIGNED_WORDS of them (all, when there are fewer)."""
    n = len(set(words))
    return len(said) >= min(MIN_ALIGNED_WORDS, n) and len(said) >= MIN_ALIGNED * n


def _said_more_fully_elsewhere(points: list[list[str]], k: int, phrasing: str, sentence: str) -> bool:
    """The sentence says another point at least as fully as point `k`'s `phrasing`; not a point
    about another format ("E5M2 has four exponent bits" says E4M3's layout, of E5M2)."""
    mine = _bag_share(phrasing, sentence)
    return any(
        _bag_share(o, sentence) >= mine
        for j, other in enumerate(points)
        if j != k and names_agree(other, sentence)
        for o in other
    )


def _range_of(t: _Tokens, i: int) -> tuple[int, int]:
    """(start, end) of the number at `i` with the other end of a range it is part of."""
    start, end = i, i + 1
    for j in range(i + 1, min(i + 4, len(t.stems))):
        if _is_number(t.stems[j]) and _RANGE_JOIN.fullmatch(t.text[t.spans[i][1] : t.spans[j][0]]):
            end = j + 1
            break
    for j in range(i - 1, max(i - 4, -1), -1):
        if _is_number(t.stems[j]) and _RANGE_JOIN.fullmatch(t.text[t.spans[j][1] : t.spans[i][0]]):
            start = j
            break
    return start, end


def _number_otherwise(
    claim: _Tokens, sentence: _Tokens, answer: _Tokens, point_numbers: frozenset[str]
) -> tuple[int, int] | None:
    """(claim number index, sentence number index): the claim's number said by the sentence
    with another value for the same thing, in any word order, or None. `point_numbers`: every
    number any phrasing of the point says ("twice" as 2)."""
    if len(sentence.stems) > MAX_WORDS:
        return None
    numbers = [i for i, w in enumerate(claim.stems) if _is_number(w) and _whole(w, claim.source)]
    if not numbers:
        return None
    words = _topic_words(claim)
    if not _says_enough(_met(words, sentence.stems), words):
        return None  # the sentence says too little of the point to say its number
    if any(_identifier(w) and w not in sentence.stems for w in words):
        return None  # the point names a format or a stage the sentence does not ("E5M2")
    subject = _subject(claim)
    numbered_subject = subject + 1 < len(claim.stems) and _is_number(claim.stems[subject + 1])
    claim_items, items = _items(claim), _items(sentence)
    for i in numbers:
        if i in (subject, subject + 1):
            continue  # the point's subject ("stage 1 shards ..."): another subject is another claim
        anchor = _near(claim, i, i + 1, claim_items, NUMBER_REACH) & words
        own = float(claim.stems[i])
        start, end = _range_of(claim, i)
        counts = _unit(claim, end - 1)  # what the point's number (or range) counts
        values = [float(v) for v in claim.stems[start:end] if _is_number(v)]
        if not anchor or any(
            _agrees(float(w), own, _percent(claim.stems, i + 1) != _percent(answer.stems, k + 1), ROUNDING)
            for k, w in enumerate(answer.stems)
            if _is_number(w)
        ):
            continue  # nothing says what the number counts; or the answer says it somewhere
        for j, w in enumerate(sentence.stems):
            if not _is_number(w) or not _whole(w, sentence.source):
                continue
            if not _met(anchor, _near(sentence, j, j + 1, items, NUMBER_REACH)):
                continue  # a number of something else
            unit = _unit(sentence, _range_of(sentence, j)[1] - 1)
            if unit and unit != counts:
                continue  # "ten classes" counts classes, not the point's "one tenth"; "another
                # 10 to 20 epochs" counts epochs, not the point's "after epoch 5"
            if _ratio(sentence, j):
                continue  # "1 in 10 tokens": a ratio
            counted = {claim.stems[i - 1] if i else "", sentence.stems[j - 1] if j else ""} & COUNTERS
            if counted and {own, float(w)} <= {0.0, 1.0}:
                continue  # "from step one" says "at step zero"
            x, shares = float(w), _percent(claim.stems, i + 1) != _percent(sentence.stems, j + 1)
            if min(values) <= x <= max(values) or any(_agrees(x, v, shares, APPROXIMATE) for v in values):
                continue  # the number said roughly ("around 57,000" for 57,344), or inside its range
            if any(_agrees(x, float(n), shares, ROUNDING) for n in point_numbers):
                continue  # a number the point gives elsewhere
            if numbered_subject and j > 0 and sentence.stems[j - 1] == claim.stems[subject]:
                continue  # the sentence's own subject ("stage 2 also shards the gradients")
            if _taken_back(sentence, j + 1):
                continue  # "the decay is 0.99, no wait, 0.999"
            near = range(max(0, j - NEGATION_REACH), min(len(sentence.stems), j + NEGATION_REACH + 1))
            if any(_is_negation(sentence.surface[k]) for k in near):
                continue  # "not 100"
            return i, j
    return None


def _agrees(x: float, y: float, shares: bool, tolerance: float) -> bool:
    """`x` says `y`, within `tolerance` (relative); with `shares` (one of them a percentage) also
    as the same share ("10 %" for 0.1). Between 0 and 1 their distances to 1 must agree too:
    a decay of 0.99 is no rounded 0.999, and beta2 0.9999 no rounded 1.0."""

    def near(a: float, b: float) -> bool:
        return abs(a - b) <= tolerance * max(abs(a), abs(b))

    def close(a: float, b: float) -> bool:
        below_one = 0 < min(a, b) < 1 and max(a, b) <= 1
        return near(a, b) and (not below_one or near(1 - a, 1 - b))

    return any(close(x, v) for v in ((y, y * 100, y / 100) if shares else (y,)))


def _whole(word: str, source: str) -> bool:
    """The digits are a number the grader's number reader reads in `source` ("4 × 10⁵" holds no 4)."""
    return round(float(word), 9) in _whole_numbers(source)


def _number_substitution(c: _Tokens, s: _Tokens, sentence: str, i: int, j: int) -> Substitution:
    return _swapped(c, s, sentence, _range_of(c, i), _range_of(s, j))


def _point_numbers(phrasings: list[str]) -> frozenset[str]:
    """Every number a point's phrasings give, a factor said in words too ("twice" is 2)."""
    return frozenset(w for p in phrasings for w in tokens(p).stems if _is_number(w)) | frozenset(
        repr(q.value) for p in phrasings for q in multiples(p)
    )


def _number_reading(
    points: list[list[str]], k: int, sentences: list[str], answer: _Tokens
) -> Substitution | None:
    """A sentence that says point `k`'s number with another value, in any word order; not a
    sentence that says another point at least as fully."""
    phrasings = points[k]
    if any(_EXAMPLE.search(p) for p in phrasings):
        return None  # its number is an example: another number is another example
    if any(_ARITHMETIC.search(p) for p in phrasings):
        return None  # a sum or a formula: its numbers are steps, checked as the answer's number
    numbers = _point_numbers(phrasings)
    numbered = [p for p in phrasings if any(_is_number(w) for w in tokens(p).stems)]
    said = [x for x in sentences if any(_is_number(w) for w in tokens(x).stems)] if numbered else []
    for phrasing in numbered:
        c = tokens(phrasing)
        for sentence in said:
            s = tokens(sentence)
            found = _number_otherwise(c, s, answer, numbers)
            if found is None or _said_more_fully_elsewhere(points, k, phrasing, sentence):
                continue
            return _number_substitution(c, s, sentence, *found)
    return None


def _head(t: _Tokens, end: int) -> str:
    """The first content word after `end`: what a preposition governs ("before *the optimizer*
    step", "after *backward*")."""
    return next(
        (
            t.stems[k]
            for k in range(end, len(t.stems))
            if _is_content(t.surface[k]) and t.stems[k] not in GOVERNING
        ),
        "",
    )


def _around(t: _Tokens, start: int, end: int, item: list[int]) -> set[str]:
    """The words that say what the term at [start, end) is about: for a preposition the word it
    governs, else the words within TERM_REACH either side in its clause or list item."""
    if t.stems[end - 1] in GOVERNING:
        return {_head(t, end)} - {""}
    return _near(t, start, end, item, TERM_REACH)


def _phrase_at(stems: Phrase, phrase: Phrase) -> list[int]:
    n = len(phrase)
    return [i for i in range(len(stems) - n + 1) if stems[i : i + n] == phrase]


def _term_otherwise(
    claim: _Tokens, sentence: _Tokens, answer: _Tokens, point: frozenset[str]
) -> tuple[int, int, int, int] | None:
    """(claim term start, end, sentence term start, end): one of the claim's terms said by the
    sentence as a term the rubric sets against it, next to a word that stands by the claim's
    term, in any word order; or None. Two of the claim's terms said the other way round ("a
    smaller batch needs a lower learning rate" for "a larger batch allows a higher learning
    rate") is the claim turned round consistently, no swap."""
    if len(sentence.stems) > MAX_WORDS:
        return None
    found = _flips(claim, sentence, answer, point)
    if len(found) != 1:
        return None  # none, or the claim turned round consistently
    swap = next(iter(found.values()))
    return None if swap[0] == _subject(claim) else swap  # another subject is another claim


def _flips(
    claim: _Tokens, sentence: _Tokens, answer: _Tokens, point: frozenset[str]
) -> dict[Phrase, tuple[int, int, int, int]]:
    """Per term of the claim that the sentence says as an opposed term, in any word order and
    next to a word that stands by the claim's term: (claim start, end, sentence start, end)."""
    pairs = opposed()
    terms = _terms(claim.stems)
    found: dict[Phrase, tuple[int, int, int, int]] = {}
    said_words = set(sentence.stems)
    if not any(b[0] in said_words for a0, a1 in terms for b in pairs[claim.stems[a0:a1]]):
        return found  # the sentence says no term set against any of the claim's
    words = _topic_words(claim)
    said_all = _met(words, sentence.stems)
    least = len(words) - MAX_TERM  # the fewest topic words left once a term is set aside
    if len(said_all) < min(MIN_ALIGNED_WORDS, least) or len(said_all) < MIN_ALIGNED * least:
        return found  # too little of the claim, whichever term is set aside
    claim_items, items, clause = _items(claim), _items(sentence), _clauses(sentence)
    for a0, a1 in terms:
        a = claim.stems[a0:a1]
        if any(x0 < a1 and a0 < x1 for x0, x1, _, _ in found.values()):
            continue  # a longer term read there already ("allow higher", then "higher")
        if _holds(answer.stems, a):
            continue  # the answer says the point's own term somewhere
        rest = words - set(a)
        said = said_all - set(a)
        if not _says_enough(said, rest):
            continue  # the sentence says too little of the point
        if any(_identifier(w) and w not in sentence.stems for w in rest):
            continue  # the point names a format or a stage the sentence does not
        anchor = _around(claim, a0, a1, claim_items) & rest
        if not anchor:
            continue
        claim_negated = any(
            _is_negation(w) for w in claim.surface[max(0, a0 - NEGATION_REACH) : a1 + NEGATION_REACH]
        )
        for b in pairs[a]:
            if set(b) <= point:
                continue  # a term of the point's own phrasings
            for b0 in _phrase_at(sentence.stems, b):
                b1 = b0 + len(b)
                if not _met(anchor, _around(sentence, b0, b1, items)):
                    continue  # about something else
                own_clause = [
                    w for k, w in enumerate(sentence.stems) if clause[k] == clause[b0] and not b0 <= k < b1
                ]
                if len(_met(rest, own_clause)) < min(MIN_ALIGNED_WORDS, len(said)):
                    continue  # a clause of its own ("and recompute the rest during the backward pass")
                near = sentence.surface[max(0, b0 - NEGATION_REACH) : b1 + NEGATION_REACH]
                if any(_is_negation(w) for w in near) != claim_negated or _taken_back(sentence, b1):
                    continue  # "don't raise it"; "weight decay, sorry, clipping"
                if _softened(sentence, b0, b1):
                    continue  # "almost always" for "usually"
                found.setdefault(a, (a0, a1, b0, b1))
                break
    return found


@functools.lru_cache(maxsize=4096)
def _terms(stems: Phrase) -> tuple[tuple[int, int], ...]:
    """(start, end) of every stretch of the claim that the bank sets against another term,
    longest first."""
    pairs = opposed()
    return tuple(
        (i, i + n)
        for n in range(MAX_TERM, 0, -1)
        for i in range(len(stems) - n + 1)
        if stems[i : i + n] in pairs
    )


def _term_reading(
    points: list[list[str]], k: int, sentences: list[str], answer: _Tokens
) -> Substitution | None:
    """A sentence that says point `k` with one of its terms swapped, in any word order; not a
    sentence that says another point at least as fully, nor a term another point says."""
    phrasings = [p for p in points[k] if _terms(tokens(p).stems)]
    if not phrasings:
        return None  # no term of the point is set against another
    point = frozenset(w for p in points[k] for w in tokens(p).stems)
    theirs = [tokens(o).stems for j, other in enumerate(points) if j != k for o in other]
    for phrasing in phrasings:
        c = tokens(phrasing)
        for sentence in sentences:
            s = tokens(sentence)
            found = _term_otherwise(c, s, answer, point)
            if found is None or any(_holds(t, s.stems[found[2] : found[3]]) for t in theirs):
                continue  # none; or a term another point says
            if _said_more_fully_elsewhere(points, k, phrasing, sentence):
                continue
            return _substitution(c, s, sentence, (_bag_share(phrasing, sentence), *found))
    return None


def read_substitution(
    claim: str, sentence: str, *, answer: str, phrasings: tuple[str, ...] = ()
) -> Substitution | None:
    """The point `claim` said by `sentence` with a term swapped, or None.

    `answer` is the whole answer: a point whose own term the answer says anywhere is not
    read as swapped. `phrasings`: the point's other phrasings; a term one of them says is
    the point's own ("uniformly" in "INT8 spaces values uniformly" is no swap for "floats
    space values logarithmically").

    >>> read_substitution("add their losses to the main loss with lower weights",
    ...     "You add their losses to the main loss, weighted higher than the main head.",
    ...     answer="You add their losses to the main loss, weighted higher than the main head.").said
    'higher'
    >>> read_substitution("use gradient clipping with max norm 1.0",
    ...     "Clip the gradient norm at 100.", answer="Clip the gradient norm at 100.").wrong_claim
    'use gradient clipping with max norm 100'
    """
    return read_points([[claim, *phrasings]], [sentence], answer)[0]


def _substitution(
    c: _Tokens, s: _Tokens, sentence: str, found: tuple[float, int, int, int, int]
) -> Substitution:
    _, a0, a1, b0, b1 = found
    return _swapped(c, s, sentence, (a0, a1), (b0, b1))


def _compound(t: _Tokens, start: int, end: int) -> tuple[int, int]:
    """[start, end) widened to the hyphenated word it is part of ("batch" in "mini-batch")."""

    def joined(k: int) -> bool:  # token k is hyphened to token k - 1
        return 0 < k < len(t.spans) and t.written[t.spans[k - 1][1] : t.spans[k][0]] == "-"

    while joined(start):
        start -= 1
    while joined(end):
        end += 1
    return start, end


def _swapped(
    c: _Tokens, s: _Tokens, sentence: str, claim: tuple[int, int], said: tuple[int, int]
) -> Substitution:
    """The claim with its stretch `claim` replaced by the sentence's stretch `said`, each widened
    to a whole hyphenated word, as written (“in training BatchNorm normalizes with the running
    mean”, not “… the current mini running mean”)."""
    a0, a1 = _compound(c, *claim)
    b0, b1 = _compound(s, *said)
    words = s.written[s.spans[b0][0] : s.spans[b1 - 1][1]]
    instead = c.written[c.spans[a0][0] : c.spans[a1 - 1][1]]
    wrong = c.written[: c.spans[a0][0]] + words + c.written[c.spans[a1 - 1][1] :]
    return Substitution(said=words, instead_of=instead, sentence=sentence, wrong_claim=wrong)


def _plain_share(claim: str, sentence: str) -> float:
    """The share of the claim's content words the sentence says in the claim's order."""
    c, s = tokens(claim), tokens(sentence)
    blocks = difflib.SequenceMatcher(None, c.stems, s.stems, autojunk=False).get_matching_blocks()
    said = {b.a + k for b in blocks for k in range(b.size)}
    content = [i for i, w in enumerate(c.surface) if _is_content(w)]
    return sum(i in said for i in content) / max(len(content), 1)


def _twin_term(claim: _Tokens, twin: _Tokens) -> tuple[int, int, Phrase] | None:
    """Where a point and its twin differ in one stretch only ("… means overfitting" / "… means
    underfitting"): the point's stretch and the twin's words for it."""
    ops = difflib.SequenceMatcher(None, claim.stems, twin.stems, autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    if len(changed) != 1 or changed[0][0] != "replace":
        return None
    _, a0, a1, b0, b1 = changed[0]
    return a0, a1, twin.stems[b0:b1]


def _bare_twin(
    claim: _Tokens, twin: tuple[int, int, Phrase], sentence: _Tokens, answer: _Tokens
) -> tuple[float, int, int, int, int] | None:
    """A sentence that says nothing but the twin's term, hedges and small words aside ("That's
    underfitting." for "a widening train-validation gap means overfitting", whose twin says
    "underfitting"): the point said wrong, with nothing around it to align."""
    a0, a1, term = twin
    frame = _DIAGNOSIS.match(sentence.text)
    if any(_is_number(w) or w in DIRECTION for w in term) or frame is None:
        return None  # "It's lower." answers something else; a name is said in a diagnosis frame
    hedges = _hedges()
    said = [
        j
        for j, w in enumerate(sentence.surface)
        if sentence.spans[j][0] >= frame.end() and _is_content(w) and sentence.stems[j] not in hedges
    ]
    if (
        not said
        or said != list(range(said[0], said[0] + len(term)))
        or sentence.stems[said[0] : said[-1] + 1] != term
    ):
        return None
    b0, b1 = said[0], said[-1] + 1
    if any(_is_negation(w) for w in sentence.surface) or _taken_back(sentence, b1):
        return None  # "not underfitting"; "underfitting, sorry, overfitting"
    if _holds(answer.stems, claim.stems[a0:a1]):
        return None  # the answer says the point's own term somewhere
    return (1.0, a0, a1, b0, b1)


def read_points(
    points: list[list[str]], sentences: list[str], answer: str, twins: list[str] | None = None
) -> list[Substitution | None]:
    """Per key point (its phrasings), a sentence of the answer that says it with a term
    swapped, or None. A sentence that says another of the question's points at least as
    fully as it says this one with the term set aside is that point's, not this one said
    wrong; and a term another point says is that point's ("at inference BatchNorm
    normalizes with the running mean" is the inference point, not the training point's
    "mini-batch mean" swapped).

    >>> points = [["in training BatchNorm normalizes with the mini-batch mean"],
    ...           ["at inference BatchNorm normalizes with the running mean"]]
    >>> read_points(points, ["At inference BatchNorm normalizes with the running mean."], "")
    [None, None]
    >>> points = [["make sure gradient clipping is on"], ["look at the data at that step"]]
    >>> [s and s.said for s in read_points(points, ["Make sure weight decay is on."], "")]
    ['weight decay', None]

    With the points' `twins`, a sentence that says only the term a point's twin puts in place
    of the point's own is that point said wrong:

    >>> found = read_points([["a widening gap means overfitting"]], ["That's underfitting."],
    ...                     "That's underfitting.", twins=["a widening gap means underfitting"])
    >>> found[0] and found[0].wrong_claim
    'a widening gap means underfitting'
    """
    found: list[Substitution | None] = []
    stems = [[tokens(p).stems for p in phrasings] for phrasings in points]
    said = tokens(answer)
    for k, phrasings in enumerate(points):
        # a term another point says is that point's term: "running" in the inference point
        theirs = [t for j, o in enumerate(stems) if j != k for t in o]
        point = frozenset(w for t in stems[k] for w in t)
        numbers = _point_numbers(phrasings)
        best: tuple[float, Substitution] | None = None
        for phrasing in phrasings:
            for sentence in sentences:
                c, s = tokens(phrasing), tokens(sentence)
                if not c.stems or not s.stems or len(s.stems) > MAX_WORDS:
                    continue
                swap = _swap(c, s, said, point, numbers)
                if swap is None or (best is not None and swap[0] <= best[0]):
                    continue
                if any(_holds(t, s.stems[swap[3] : swap[4]]) for t in theirs):
                    continue
                if len(_flips(c, s, said, point)) > 1:
                    continue  # "a smaller batch needs a lower learning rate": the claim turned round
                others = max(
                    (_plain_share(p, sentence) for j, o in enumerate(points) if j != k for p in o),
                    default=0.0,
                )
                if swap[0] >= others:
                    best = (swap[0], _substitution(c, s, sentence, swap))
        if best is None and twins and twins[k]:
            claim = tokens(phrasings[0])
            if (term := _twin_term(claim, tokens(twins[k]))) is not None:
                for sentence in sentences:
                    s = tokens(sentence)
                    if (bare := _bare_twin(claim, term, s, said)) is not None:
                        best = (bare[0], _substitution(claim, s, sentence, bare))
                        break
        found.append(
            best[1]
            if best
            else _number_reading(points, k, sentences, said) or _term_reading(points, k, sentences, said)
        )
    return found
