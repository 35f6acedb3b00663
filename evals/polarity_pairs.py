"""Hard minimal pairs for the polarity reader, made by editing true sentences.

`evals/train_polarity.py` trains the reader on (claim, sentence) pairs. The rubric's
twins give one wrong version of each claim; this module gives many more, of every
kind of error an interviewer hears, by editing sentences that *state* a claim:

- reversed direction: a word swapped for its opposite ("lower" for "raise");
- wrong entity: a term of the field swapped for another of its kind ("weight decay"
  for "gradient clipping");
- swapped roles: two terms traded around a word that makes order matter
  ("a bad batch rather than an fp16 overflow");
- wrong number: a number changed ("stage 2" for "stage 1", "30 %" for "3 %");
- over-general: a hedge made absolute ("usually" to "always");
- negation: a "not" put in or taken out.

An edit counts only where it touches the claim's own words, so that the edited
sentence really says the claim the wrong way round. Benign edits (fillers, hedges
around the whole sentence) keep the claim stated. The word lists are data:
`evals/polarity/perturbations.yaml`.

    >>> edits = load_edits()
    >>> [kind for kind, _ in perturb("Lower the learning rate first.", "lower the learning rate", edits)][:1]
    ['reversed-direction']
    >>> dict(perturb("Turn on gradient clipping.", "gradient clipping", edits))["wrong-entity"] != ""
    True
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

EDITS_FILE = Path(__file__).resolve().parent / "polarity" / "perturbations.yaml"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-']*")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
_NEGATABLE = re.compile(r"\b(is|are|was|were|does|do|can|should|will|would|must)\b(?! not\b)", re.I)
_NEGATED = re.compile(
    r"\b(is|are|was|were|does|do|can|should|will|would|must) not\b|\b(does|do|is|are|can|should|won|would)n't\b",
    re.I,
)


@dataclass(frozen=True)
class Edits:
    antonyms: dict[str, str]  # word -> its opposite (both ways)
    overgeneral: list[tuple[str, str]]  # (hedged, absolute)
    terms: dict[str, list[str]]  # group -> terms of that kind
    asymmetric: list[str]  # words that make the order of two terms matter
    prefixes: list[str]
    suffixes: list[str]


def load_edits(path: Path = EDITS_FILE) -> Edits:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    antonyms: dict[str, str] = {}
    for a, b in data["antonyms"]:
        antonyms.setdefault(a.lower(), b.lower())
        antonyms.setdefault(b.lower(), a.lower())
    return Edits(
        antonyms=antonyms,
        overgeneral=[(a, b) for a, b in data["overgeneral"]],
        terms={k: list(v) for k, v in data["terms"].items()},
        asymmetric=list(data["asymmetric"]),
        prefixes=list(data["benign"]["prefixes"]),
        suffixes=list(data["benign"]["suffixes"]),
    )


def _stem(word: str) -> str:
    w = word.lower().strip("'-")
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text)}


def _cased(new: str, old: str) -> str:
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


def _find(term: str, text: str) -> re.Match[str] | None:
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text, re.I)


def perturb(
    sentence: str, claim: str, edits: Edits, rng: random.Random | None = None
) -> list[tuple[str, str]]:
    """Wrong versions of `sentence` (which states `claim`): (kind of error, edited sentence).

    Only edits that touch a word of the claim are made, one of each kind at most.
    """
    rng = rng or random.Random(0)
    focus = _stems(claim)
    out: list[tuple[str, str]] = []

    def touches(span: str) -> bool:
        return bool(_stems(span) & focus)

    # reversed direction: one opposite word, among the claim's words
    words = [
        m for m in _WORD.finditer(sentence) if m.group().lower() in edits.antonyms and touches(m.group())
    ]
    if words:
        m = rng.choice(words)
        new = _cased(edits.antonyms[m.group().lower()], m.group())
        out.append(("reversed-direction", sentence[: m.start()] + new + sentence[m.end() :]))
    # over-general: a hedge made absolute (the hedge need not be the claim's: it scopes it)
    hedges = [(m, b) for a, b in edits.overgeneral if (m := _find(a, sentence))]
    if hedges:
        m, absolute = rng.choice(hedges)
        out.append(
            ("over-general", sentence[: m.start()] + _cased(absolute, m.group()) + sentence[m.end() :])
        )
    # terms of the field in the sentence, with their group
    found = []
    for group, terms in edits.terms.items():
        for term in terms:
            if (m := _find(term, sentence)) and touches(m.group()):
                found.append((m, group))
    found.sort(key=lambda x: (x[0].start(), -len(x[0].group())))
    kept: list[tuple[re.Match[str], str]] = []
    for m, g in found:  # longest match at each place, no overlaps
        if not kept or m.start() >= kept[-1][0].end():
            kept.append((m, g))
    if kept:
        m, group = rng.choice(kept)
        others = [t for t in edits.terms[group] if not _find(t, sentence) and t.lower() != m.group().lower()]
        if others:
            new = _cased(rng.choice(others), m.group())
            out.append(("wrong-entity", sentence[: m.start()] + new + sentence[m.end() :]))
    # swapped roles: two terms around a word that makes their order matter
    for (a, _), (b, _) in itertools.pairwise(kept):
        between = sentence[a.end() : b.start()].lower()
        if len(between.split()) <= 6 and any(_find(w, between) for w in edits.asymmetric):
            swapped = (
                sentence[: a.start()]
                + b.group()
                + sentence[a.end() : b.start()]
                + a.group()
                + sentence[b.end() :]
            )
            out.append(("swapped-roles", swapped))
            break
    # wrong number
    numbers = list(_NUMBER.finditer(sentence))
    if numbers:
        m = rng.choice(numbers)
        value = float(m.group(1))
        if value.is_integer() and value < 10:
            new = str(int(value) + rng.choice([1, 2]) if value < 3 else int(value) - 1)
        else:
            factor = rng.choice([0.1, 0.5, 2, 10])
            changed = value * factor
            new = str(int(changed)) if changed.is_integer() else f"{changed:g}"
        out.append(("wrong-number", sentence[: m.start(1)] + new + sentence[m.end(1) :]))
    # negation put in or taken out
    if m := _NEGATED.search(sentence):
        text = m.group()
        plain = re.sub(r" not$|n't$", "", text)
        plain = {"won": "will", "ca": "can"}.get(plain.lower(), plain)
        out.append(("negation", sentence[: m.start()] + plain + sentence[m.end() :]))
    elif m := _NEGATABLE.search(sentence):
        out.append(("negation", sentence[: m.end()] + " not" + sentence[m.end() :]))
    return [(k, s) for k, s in out if s != sentence]


def benign(sentence: str, edits: Edits, rng: random.Random) -> str:
    """The same claim with a filler before it or a hedge after it."""
    s = sentence.strip()
    if rng.random() < 0.5:
        p = rng.choice(edits.prefixes)
        return p + s[:1].lower() + s[1:] if not s[:2].isupper() else p + s
    return s.rstrip(".!?") + rng.choice(edits.suffixes)
