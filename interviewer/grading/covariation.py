"""Which way two quantities move together in a sentence: "a bigger batch, a bigger learning
rate" against "a bigger batch, a smaller learning rate".

"scale the learning rate linearly with batch size" and its twin "scale the learning rate
inversely with batch size" differ in one word, and an answer rarely says either word: it
says "when you increase the batch size, decrease the learning rate by the same factor",
which sentence vectors put next to the right claim. Read here instead: where a sentence
names both quantities of a claim (`covariation.quantities` in cues.yaml: the learning rate,
the batch size, memory, the model's size, overfitting, training data, resolution, gradient
noise, momentum, communication) with a direction word next to each ("increase", "bigger",
"8x", "halve", "1/8", ...: `covariation.up` and `.down`), the two directions give the sign
of the relation it states: the same direction, they grow together; opposite directions, one
shrinks as the other grows. Where it gives a direction for one of them or none, a relation
word gives the sign ("linearly", "proportionally": together; "inversely": opposite), if the
sentence names no third quantity. A third relation is one quantity held ("the same",
"fixed": `covariation.held`) while the other moves, either way ("change the batch size":
`covariation.moved`): "keep the learning rate the same when the batch size grows".

A claim is read so only when it and its twin relate the same two quantities in different
ways and the twin changes no hedge ("bigger models *always* overfit more" against "... *can*
overfit less" is not read): 15 claims of the bank, among them the linear scaling rule and
its misconceptions (the learning rate lowered, or kept, as the batch grows), memory that
grows with the batch, more data and a bigger model against overfitting, a bigger batch's
lower gradient noise. A sentence with the twin's relation then says the twin. Not read: a
sentence with a negation anywhere ("don't lower the learning rate when the batch grows"), a
question, a quantity moved both ways ("raise or lower the learning rate") or held and moved
at once, and a direction word more than `WINDOW` words from its quantity, past a
neighbouring quantity, or across a comma, a colon or a semicolon ("bigger batch,
proportionally smaller LR" is read as two clauses, one direction each). A word between two
quantities goes to the first where that one has no direction word before it ("gradient
variance *shrinks* as the batch grows"), else to the second ("increase the batch and
*decrease* the LR").

Pure text: no model, no state.

    >>> claim = "scale the learning rate linearly with batch size"
    >>> twin = "scale the learning rate inversely with batch size"
    >>> read_covariation(claim, twin, ["If you increase the batch size, decrease the LR by the same factor."])
    OrderReading(lean=-1, sentence='If you increase the batch size, decrease the LR by the same factor.')
    >>> read_covariation(claim, twin, ["Double the batch, double the learning rate."]).lean
    1
    >>> read_covariation(claim, twin, ["Don't lower the learning rate as the batch grows."]) is None
    True
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from interviewer.cues import covariation, overstated
from interviewer.grading.numbers import words_to_digits
from interviewer.grading.order import OrderReading
from interviewer.grading.text import NEGATION, straight

# A direction word counts for a quantity when it stands at most this many words before it
# ("increase the global batch size") or, where none does, after it ("the batch size grows").
WINDOW = 3
_CLAUSES = re.compile(r"[,;:()\u2014\u2013]|\s-\s")
_TOKEN = re.compile(
    r"\d+\s*/\s*\d+|\d+(?:\.\d+)?\s*[x×]|[x×]\s*\d+(?:\.\d+)?|[a-z]+(?:['’][a-z]+)?|\d+(?:\.\d+)?"
)


# "eight times the batch", "4 times the learning rate": a multiplier, as "8x" is
_TIMES = re.compile(r"\b(\d+(?:\.\d+)?)\s+times\b")


def _tokens(clause: str) -> list[str]:
    """Lower-case words, numbers and multipliers ("8x", "1/8"; "eight times" as "8x").

    >>> _tokens("Eight times the batch, 1 / 8 the LR")
    ['8x', 'the', 'batch', '1/8', 'the', 'lr']
    """
    text = _TIMES.sub(r"\1x", words_to_digits(clause.lower()))
    return [re.sub(r"\s+", "", t) for t in _TOKEN.findall(text)]


_MULTIPLIER = re.compile(r"(\d+(?:\.\d+)?)[x×]|[x×](\d+(?:\.\d+)?)|1/(\d+)")


def _direction(token: str) -> int:
    """+1 for a word that says "more" ("bigger", "8x"), -1 for "less" ("halve", "1/8", "0.5x"),
    else 0 ("1x", "the").

    >>> [_direction(t) for t in ("bigger", "8x", "halve", "1/8", "0.5x", "1x", "the")]
    [1, 1, -1, -1, -1, 0, 0]
    """
    cues = covariation()
    if token in cues.up:
        return 1
    if token in cues.down:
        return -1
    multiplier = _MULTIPLIER.fullmatch(token)
    if multiplier is None:
        return 0
    times, by, over = multiplier.groups()
    value = 1 / float(over) if over else float(times or by)
    return (value > 1) - (value < 1)


def _mentions(words: list[str]) -> list[tuple[str, int, int]]:
    """(quantity, first word, one past its last word) for each quantity named in `words`."""
    quantities = covariation().quantities
    found: list[tuple[str, int, int]] = []
    i = 0
    while i < len(words):
        match = next(
            (
                (name, len(phrase))
                for name, phrases in quantities.items()
                for phrase in phrases
                if words[i : i + len(phrase)] == list(phrase)
            ),
            None,
        )
        if match is None:
            i += 1
            continue
        found.append((match[0], i, i + match[1]))
        i += match[1]
    return found


# The relation "the second quantity is held while the first moves" ("keep the learning rate the
# same when the batch size grows"), beside +1 (together) and -1 (apart)
HELD = 0


def _either(words: list[str]) -> set[int]:
    """Both directions where a word moves a quantity without saying which way ("change the batch")."""
    return {1, -1} if any(w in covariation().moved for w in words) else set()


@dataclass(frozen=True)
class _Moves:
    """What a sentence says of its quantities: the directions next to each, and its relation words."""

    directions: dict[str, frozenset[int]]  # every quantity named, with the directions next to it (0: held)
    relation: frozenset[int]  # +1 "linearly", "proportionally"; -1 "inversely"


@functools.lru_cache(maxsize=16_384)
def _moves(text: str) -> _Moves | None:
    """None for a question or a sentence with a negation: neither commits to a direction."""
    if text.rstrip().endswith("?") or NEGATION.search(straight(text)):
        return None
    cues = covariation()
    relations = cues.relations
    directions: dict[str, set[int]] = {}
    relation: set[int] = set()
    for clause in _CLAUSES.split(text):
        words = _tokens(clause)
        for k, word in enumerate(words):
            # "inversely proportional" is one relation, the inverse one
            if relations.get(word, 0) > 0 and k and relations.get(words[k - 1], 0) < 0:
                continue
            relation |= {relations[word]} if word in relations else set()
        mentions = _mentions(words)
        taken = 0  # one past the last word an earlier quantity took after it
        for k, (name, start, end) in enumerate(mentions):
            # the words between this quantity and its neighbours only: "a larger network will
            # overfit less" gives "larger" to the network and "less" to overfitting; a word
            # the quantity before took ("variance shrinks as the batch grows") is its own
            floor = max(mentions[k - 1][2] if k else 0, taken)
            ceiling = mentions[k + 1][1] if k + 1 < len(mentions) else len(words)
            begin = max(floor, start - WINDOW)
            if begin > floor and words[begin] in ("or", "and") and _direction(words[begin + 1]):
                begin -= 1  # "raise or lower the learning rate": the coordinated word too
            near = words[begin:start], words[end : min(ceiling, end + WINDOW)]
            # "keep the LR fixed", "the same LR"; not "raise the LR by the same factor"
            kept = [*near[0], *itertools.takewhile(lambda w: w != "by", near[1])]
            if any(w in cues.held for w in kept):
                directions.setdefault(name, set()).add(HELD)  # "the same learning rate"
                held_after = [i for i, w in enumerate(near[1]) if w in cues.held]
                if held_after and not any(w in cues.held for w in near[0]):
                    taken = end + held_after[-1] + 1  # "the LR the same when the batch grows"
                continue
            before = {d for w in near[0] if (d := _direction(w))} | _either(near[0])
            after = {d for w in near[1] if (d := _direction(w))} | _either(near[1])
            if not before and after:
                taken = end + max(i for i, w in enumerate(near[1]) if _direction(w) or w in cues.moved) + 1
            # its own word may say which way ("a noisier gradient"), where nothing by it does
            own = {d for w in words[start:end] if (d := cues.comparatives.get(w, 0))}
            # every direction next to it: "raise or lower the learning rate" moves it both ways
            directions.setdefault(name, set()).update(before or after or own)
    return _Moves({k: frozenset(v) for k, v in directions.items()}, frozenset(relation))


def relation_sign(text: str, pair: tuple[str, str]) -> int | None:
    """The sign of the relation `text` states between the two quantities of `pair`: +1 they
    move together, -1 apart, `HELD` (0) the second stays where it is while the first moves,
    None where it does not commit to one.

    >>> relation_sign("8x the batch means 1/8 the learning rate", ("batch-size", "learning-rate"))
    -1
    >>> relation_sign("LR proportional to batch size", ("batch-size", "learning-rate"))
    1
    >>> relation_sign("Use a learning rate of 3e-4.", ("batch-size", "learning-rate")) is None
    True
    >>> relation_sign("Keep the same LR when you change the batch size", ("batch-size", "learning-rate"))
    0
    """
    moves = _moves(text)
    if moves is None or not all(name in moves.directions for name in pair):
        return None
    first, second = (moves.directions[name] for name in pair)
    if second == {HELD} and first and HELD not in first:
        return HELD
    if len(first) > 1 or len(second) > 1 or HELD in first | second:
        return None  # the sentence moves a quantity both ways, or holds one
    if first and second:
        return next(iter(first)) * next(iter(second))
    if len(moves.directions) == 2 and len(moves.relation) == 1:
        return next(iter(moves.relation))  # a relation word relates the only two quantities named
    return None


def _hedged(claim: str, twin: str) -> bool:
    """Whether the twin also changes how sure the claim is ("bigger models *always* overfit
    more" against "... *can* overfit less"): the sign alone would not say which one is said."""
    absolutes, _ = overstated()
    sure = set(absolutes) | {hedge for hedges in absolutes.values() for hedge in hedges}
    return bool((set(_tokens(claim)) ^ set(_tokens(twin))) & sure)


@dataclass(frozen=True)
class SignedPair:
    """The two quantities a claim relates, with the relation it states and the one its twin does."""

    pair: tuple[str, str]
    said: int  # +1, -1 or HELD, as `relation_sign` reads them
    turned: int  # the twin's, another of the three


@functools.lru_cache(maxsize=4096)
def signed_pair(claim: str, twin: str | None) -> SignedPair | None:
    """The two quantities a claim relates and its relation, where its twin states another
    relation of the same two; None for any other claim.

    >>> signed_pair("use a bigger model to reduce overfitting", "use a smaller model to reduce overfitting")
    SignedPair(pair=('model-size', 'overfitting'), said=-1, turned=1)
    >>> signed_pair("keep the LR the same when the batch grows", "raise the LR when the batch grows").said
    0
    """
    moves = _moves(claim)
    if not twin or moves is None or _hedged(claim, twin):
        return None
    for pair in itertools.permutations(sorted(moves.directions), 2):
        said, turned = relation_sign(claim, pair), relation_sign(twin, pair)
        if said is not None and turned is not None and said != turned:
            return SignedPair(pair, said, turned)
    return None


def read_covariation(claim: str, twin: str | None, sentences: list[str]) -> OrderReading | None:
    """The sentence that relates the claim's two quantities with the claim's sign (lean +1) or,
    failing any, with its twin's (lean -1); None where the claim and its twin are not told
    apart by a sign or no sentence relates the two quantities."""
    signed = signed_pair(claim, twin)
    if signed is None:
        return None
    reads = [(read, s) for s in sentences if (read := relation_sign(s, signed.pair)) is not None]
    right = [s for read, s in reads if read == signed.said]
    if right:
        return OrderReading(lean=1, sentence=right[0])
    turned = [s for read, s in reads if read == signed.turned]
    return OrderReading(lean=-1, sentence=turned[0]) if turned else None
