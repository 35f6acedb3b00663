"""The cue lists of `cues.yaml`, compiled once: the grader's and speech's words and patterns.

One data file holds every list that grows (fillers, negation idioms, refutations, tag
questions, instructions to the grader, "I don't know", number corrections, stopwords,
speech fillers); this module only reads and compiles it. Grading (`grading/text.py`,
`grading/numbers.py`) and speech (`speech/transcription.py`) take their cues from here,
and `tests/test_cues.py` checks every example the file gives.

    >>> bool(pattern("negation").search("you don't need it")), bool(pattern("negation").search("no doubt"))
    (True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CUES_FILE = Path(__file__).with_name("cues.yaml")
# Every YAML file of the package is read with this: libyaml's C loader where PyYAML was built with
# it (the bank's rubrics and script load in 0.2 s instead of 1.7 s), else the pure-Python one.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PIECE = re.compile(r"<<(\w+)>>")


@dataclass(frozen=True)
class Cue:
    name: str
    about: str
    pattern: re.Pattern[str]
    match: tuple[str, ...]  # examples it must find
    no_match: tuple[str, ...]  # examples it must not


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(CUES_FILE.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    return data


def _source(parts: list[str], pieces: dict[str, list[str]]) -> str:
    return _PIECE.sub(lambda m: "".join(pieces[m.group(1)]), "".join(parts))


@cache
def cues() -> dict[str, Cue]:
    """Every pattern cue by name, compiled (case-insensitive)."""
    data = _data()
    return {
        name: Cue(
            name=name,
            about=entry["about"],
            pattern=re.compile(_source(entry["pattern"], data["pieces"]), re.I),
            match=tuple(entry.get("match", ())),
            no_match=tuple(entry.get("no_match", ())),
        )
        for name, entry in data["patterns"].items()
    }


def pattern(name: str) -> re.Pattern[str]:
    """The compiled pattern of one cue; an unknown name lists the known ones."""
    found = cues().get(name)
    if found is None:
        raise KeyError(f"no cue {name!r} in {CUES_FILE.name}; known: {', '.join(sorted(cues()))}")
    return found.pattern


def stopwords() -> frozenset[str]:
    return frozenset(_data()["stopwords"].split())


def number_hedges() -> frozenset[str]:
    return frozenset(_data()["number_hedges"].split())


def overstated() -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """({absolute: the hedges it overstates}, the words before an absolute that soften it):
    ({"always": ("usually", "often", ...), ...}, ("almost", "nearly", ...))."""
    data = _data()["overstated"]
    absolutes = {str(k): tuple(str(w) for w in v) for k, v in data["absolutes"].items()}
    return absolutes, tuple(str(w) for w in data["softened_by"])


@dataclass(frozen=True)
class Covariation:
    """The cue lists of `covariation`: which way a sentence moves its quantities."""

    quantities: dict[str, tuple[tuple[str, ...], ...]]  # name: its phrasings as word tuples, longest first
    up: frozenset[str]  # words that say "more": "increase", "bigger", "double"
    down: frozenset[str]  # words that say "less": "decrease", "smaller", "halve"
    held: frozenset[str]  # words that keep a quantity where it is: "same", "fixed"
    moved: frozenset[str]  # words that move a quantity without saying which way: "change"
    relations: dict[str, int]  # +1 they move together ("linearly"), -1 apart ("inversely")
    # a quantity's word that says its direction itself ("noisier": more gradient noise)
    comparatives: dict[str, int]


@cache
def covariation() -> Covariation:
    data = _data()["covariation"]
    return Covariation(
        quantities={
            str(name): tuple(sorted((tuple(str(p).split()) for p in phrases), key=len, reverse=True))
            for name, phrases in data["quantities"].items()
        },
        up=frozenset(map(str, data["up"])),
        down=frozenset(map(str, data["down"])),
        held=frozenset(map(str, data["held"])),
        moved=frozenset(map(str, data["moved"])),
        relations={str(k): int(v) for k, v in data["relations"].items()},
        comparatives={str(k): int(v) for k, v in data.get("comparatives", {}).items()},
    )


def speech_fillers() -> tuple[tuple[str, ...], dict[str, str]]:
    """(the filler kinds speech counts, {spelling: kind} for the one-word ones)."""
    fillers = _data()["speech_fillers"]
    return tuple(fillers["kinds"]), {str(k): str(v) for k, v in fillers["spellings"].items()}
