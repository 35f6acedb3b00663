"""Which way two quantities move together in a sentence: "a bigger batch, a bigger learning
rate" against "a bigger batch, a smaller learning rate".

"scale the learning rate linearly with batch size" and its twin "scale the learning rate
inversely with batch size" differ in one word, and an answer rarely says either word: it
says "when you increase the batch size, decrease the learning rate by the same factor",
which sentence vectors put next to the right claim. Read here instead: where a sentence
names both quantities of a claim (`covariation.quantities` in cues.yaml: "learning rate",
"LR", "batch size", ...) with a direction word next to each ("increase", "bigger", "8x",
"halve", "1/8", ...: `covariation.up` and `.down`), the two directions give the sign of the
relation it states: the same direction, they grow together; opposite directions, one
shrinks as the other grows. Where it gives a direction for one quantity or none, a relation
word gives the sign ("linearly", "proportionally": together; "inversely": opposite).

A claim is read so only when it and its twin both have a sign and the signs differ: then a
sentence with the twin's sign says the twin. Not read: a sentence with a negation anywhere
("don't lower the learning rate when the batch grows"), a question, a sentence whose
mentions disagree, and a direction word more than `WINDOW` words from its quantity or across
a comma, a colon or a semicolon ("bigger batch, proportionally smaller LR" is read as two
clauses, one direction each).

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
import re

from interviewer.cues import covariation
from interviewer.grading.order import OrderReading
from interviewer.grading.text import NEGATION, straight

# A direction word counts for a quantity when it stands at most this many words before it
# ("increase the global batch size") or, where none does, after it ("the batch size grows").
WINDOW = 3
_CLAUSES = re.compile(r"[,;:()\u2014\u2013]|\s-\s")
_TOKEN = re.compile(
    r"\d+\s*/\s*\d+|\d+(?:\.\d+)?\s*[x×]|[x×]\s*\d+(?:\.\d+)?|[a-z]+(?:['’][a-z]+)?|\d+(?:\.\d+)?"
)


def _tokens(clause: str) -> list[str]:
    return [re.sub(r"\s+", "", t) for t in _TOKEN.findall(clause.lower())]


def _direction(token: str) -> int:
    """+1 for a word that says "more" ("bigger", "8x"), -1 for "less" ("halve", "1/8"), else 0."""
    up, down, _, _ = covariation()
    if token in up or re.fullmatch(r"\d+(?:\.\d+)?[x×]|[x×]\d+(?:\.\d+)?", token):
        return 1 if not re.fullmatch(r"(?:0?\.\d+|1)[x×]|[x×](?:0?\.\d+|1)", token) else 0
    if token in down or re.fullmatch(r"1/\d+", token):
        return -1
    return 0


def _mentions(words: list[str]) -> list[tuple[str, int, int]]:
    """(quantity, first word, one past its last word) for each quantity named in `words`."""
    _, _, quantities, _ = covariation()
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


@functools.lru_cache(maxsize=16_384)
def covariation_sign(text: str) -> tuple[tuple[str, str], int] | None:
    """The two quantities `text` relates and the sign of the relation, or None.

    >>> covariation_sign("8x the batch means 1/8 the learning rate")
    (('batch-size', 'learning-rate'), -1)
    >>> covariation_sign("LR proportional to batch size")
    (('batch-size', 'learning-rate'), 1)
    >>> covariation_sign("Use a learning rate of 3e-4.") is None
    True
    """
    if text.rstrip().endswith("?") or NEGATION.search(straight(text)):
        return None
    _, _, _, relations = covariation()
    directions: dict[str, set[int]] = {}
    relation: set[int] = set()
    for clause in _CLAUSES.split(text):
        words = _tokens(clause)
        for k, word in enumerate(words):
            # "inversely proportional" is one relation, the inverse one
            if relations.get(word, 0) > 0 and k and relations.get(words[k - 1], 0) < 0:
                continue
            relation |= {relations[word]} if word in relations else set()
        for name, start, end in _mentions(words):
            begin = max(0, start - WINDOW)
            if begin >= 1 and words[begin] in ("or", "and"):
                begin -= 1  # "raise or lower the learning rate": the coordinated word too
            before = {d for w in words[begin:start] if (d := _direction(w))}
            after = {d for w in words[end : end + WINDOW] if (d := _direction(w))}
            # every direction next to it: "raise or lower the learning rate" moves it both ways
            directions.setdefault(name, set()).update(before or after)
    if len(directions) != 2:
        return None
    pair = tuple(sorted(directions))
    first, second = (directions[name] for name in pair)
    if len(first) > 1 or len(second) > 1:
        return None  # the sentence moves a quantity both ways
    if first and second:
        return (pair[0], pair[1]), next(iter(first)) * next(iter(second))
    if len(relation) == 1:
        return (pair[0], pair[1]), next(iter(relation))
    return None


def read_covariation(claim: str, twin: str | None, sentences: list[str]) -> OrderReading | None:
    """The sentence that relates the claim's two quantities with the claim's sign (lean +1) or,
    failing any, with its twin's (lean -1); None where the claim and its twin are not told
    apart by a sign or no sentence relates the two quantities."""
    if not twin:
        return None
    said, wrong = covariation_sign(claim), covariation_sign(twin)
    if said is None or wrong is None or said[0] != wrong[0] or said[1] == wrong[1]:
        return None
    reads = [(read[1], s) for s in sentences if (read := covariation_sign(s)) and read[0] == said[0]]
    right = [s for sign, s in reads if sign == said[1]]
    if right:
        return OrderReading(lean=1, sentence=right[0])
    turned = [s for sign, s in reads if sign == wrong[1]]
    return OrderReading(lean=-1, sentence=turned[0]) if turned else None
