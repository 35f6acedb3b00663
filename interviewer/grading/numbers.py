"""Numbers in answers: spoken forms to digits, quantities with units, the numeric check.

It does not judge anything but numbers: no key points, no scores.

    >>> words_to_digits("seven point five e minus five")
    '7.5e-5'
    >>> words_to_digits("sixteen million seven hundred eighty one thousand three hundred twelve")
    '16781312'
    >>> [q.value for q in extract_quantities("about 41.7 minutes, or 2,500 s")]
    [41.7, 2500.0]
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from interviewer import cues
from interviewer.corpus.schema import NumericTarget
from interviewer.grading.grade import NumericCheck

_UNITS = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_NUMBER_WORDS = set(_UNITS) | set(_TENS) | set(_SCALES) | {"hundred", "point", "and", "a", "half"}
_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?|[^\sA-Za-z\d]+|\s+")


def is_number_word(word: str) -> bool:
    """ "seven", "thousand", "point", "7", "2.5": a word that can be part of a spoken number."""
    w = word.lower()
    return w in _NUMBER_WORDS or w.replace(".", "", 1).isdigit()


def _run_value(words: list[str]) -> str | None:
    """['two', 'point', 'three'] -> '2.3'; None when the words are not a number."""
    if not any(w in _UNITS or w in _TENS for w in words) and not any(
        w.replace(".", "").isdigit() for w in words
    ):
        return None
    total, current, decimals, in_decimal, scale = 0.0, 0.0, "", False, 1
    previous = ""
    for n, w in enumerate(words):
        following = words[n + 1] if n + 1 < len(words) else ""
        if scale != 1:
            return None  # "sixteen point seven eight million" ends at its scale
        if w == "point":
            in_decimal = True
        elif in_decimal:
            if w in _UNITS and _UNITS[w] < 10:
                decimals += str(_UNITS[w])
            elif w in _SCALES and decimals:
                scale = _SCALES[w]
            else:
                return None
        elif w.replace(".", "").isdigit():
            current += float(w)
        elif w in _UNITS and _UNITS[w] < 10 and previous in _UNITS and _UNITS[previous] < 10:
            current = current * 10 + _UNITS[w]  # digits read out: "four zero nine six" is 4096
        elif w in _UNITS and previous in _UNITS and 0 < _UNITS[previous] < 10 and current < 10:
            current = current * 100 + _UNITS[w]  # "five twelve" is 512
        elif w in _UNITS:
            current += _UNITS[w]
        elif (
            w in _TENS and previous in _UNITS and 0 < _UNITS[previous] < 20 and current < 20
            and following in _UNITS and 0 < _UNITS[following] < 10
        ):  # fmt: skip
            current = current * 100 + _TENS[w]  # "two fifty six" is 256 ("one eighty gig" stays 1, 80)
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w in _SCALES:
            total += max(current, 1) * _SCALES[w]
            current = 0
        previous = w
    value = total + current
    if decimals:
        value += float("0." + decimals)
    value *= scale
    if value == int(value) and (not decimals or scale != 1):
        return str(int(value))
    return f"{value:.10g}"


_ZERO_NAME_NEXT = re.compile(
    r"(?:stage|stages|one|two|three|infinity|offload|redundancy|dp|optimi[sz]er|shot|\d)$", re.I
)


def _zero_is_a_name(tokens: list[str], i: int) -> bool:
    """Whether "zero" at `tokens[i]` is a name, not 0: DeepSpeed's ZeRO, written "ZeRO" or
    followed (after a space or hyphen) by a stage ("ZeRO-3", "zero stage two", "zero
    offload"), and "zero-shot"."""
    if tokens[i] == "ZeRO":
        return True
    rest = [t for t in tokens[i + 1 : i + 4] if not t.isspace()]
    if rest[:1] == ["-"] or rest[:1] == ["++"]:
        rest = rest[1:] if rest[:1] == ["-"] else ["stage"]
    return bool(rest) and bool(_ZERO_NAME_NEXT.match(rest[0]))


def _zero_is_a_digit(tokens: list[str], i: int, run: list[str]) -> bool:
    """Whether "zero" at `tokens[i]`, inside a run of number words, is a digit read out between
    others: "one zero two four" is 1024. A digit before it and two after, as no stage is named
    ("three zero stages", "stage one zero two" stay words)."""
    after = [t.lower() for t in tokens[i + 1 : i + 6] if not t.isspace()][:2]
    digits = [w for w in [run[-1], *after] if w in _UNITS and _UNITS[w] < 10]
    return tokens[i] == "zero" and len(after) == 2 and len(digits) == 3


# After a lone "one", the words that keep it a number: a unit, a fraction, a range or a
# choice ("one percent", "one tenth", "one to two", "one or two", "one e minus four").
_ONE_THEN_NUMBER = re.compile(
    r"(?:%|per|percent|gigabytes?|gib|gb|gigs?|megabytes?|mb|terabytes?|tb|bytes?|minutes?|mins?|seconds?"
    r"|secs?|hours?|nats?|parameters?|params?|weights?|steps?|epochs?|fold|times|x|s|h|e|k|m|b|point|over"
    r"|to|or|and|in|half|thirds?|quarters?|fifths?|eighths?|tenths?|sixteenths?|hundredths?|thousandths?)$",
    re.I,
)
_ONE_AFTER = re.compile(r"(?:the|this|that|which|each|any|every|no|another)$", re.I)
# A label before "one" makes it a numeral: "stage one shards the optimizer states", "step one".
_ONE_LABEL = re.compile(
    r"(?:stages?|steps?|phases?|ranks?|layers?|levels?|epochs?|gpus?|nodes?|options?|number|rounds?"
    r"|versions?|parts?|top|types?|tiers?|days?|weeks?|zero|dp|tp|pp)$",
    re.I,
)


def _one_is_a_word(tokens: list[str], i: int, before: list[str]) -> bool:
    """Whether a lone "one" at `tokens[i]` is a determiner or a pronoun, not the number 1:
    "one bad batch", "one of them", "the one that diverged". It is 1 when a unit, a fraction,
    a range or a choice follows ("one percent", "one to two"), when nothing does ("clip at
    one."), and after a label ("stage one shards the parameters").

    >>> [words_to_digits(t, determiners=True) for t in ("so one bad batch", "clip at one.", "stage one shards")]
    ['so one bad batch', 'clip at 1.', 'stage 1 shards']
    >>> words_to_digits("so one bad batch")  # for matching words, "one" reads as "1" on both sides
    'so 1 bad batch'
    """
    after = next((t for t in tokens[i + 1 : i + 3] if not t.isspace()), "")
    prior = next((t for t in reversed(before) if not t.isspace()), "")
    if _ONE_LABEL.match(prior) or (not prior and tokens[i].islower()):
        return False  # a label's numeral, or a lower-case "one" opening a fragment: unknown, so 1
    if _ONE_AFTER.match(prior):
        return True
    return after[:1].isalpha() and not _ONE_THEN_NUMBER.match(after)


_DIGIT_WORD = "|".join(w for w, v in _UNITS.items() if v < 10)
_LEADING_POINT = re.compile(rf"\bpoint((?:\s+(?:{_DIGIT_WORD})){{2,}})\b", re.I)


def _leading_point(m: re.Match[str]) -> str:
    """ "point oh six two five" is 0.0625, unless a number comes first ("sixteen point seven")."""
    before = m.string[: m.start()].split()
    if before and (before[-1].lower() in _NUMBER_WORDS or before[-1][-1:].isdigit()):
        return m.group(0)
    return "0." + "".join(str(_UNITS[w.lower()]) for w in m.group(1).split())


_PART_WORD = "|".join(sorted(set(_UNITS) | set(_TENS), key=len, reverse=True))
# a scale, the words of the number's next part said after it, what the speaker says between,
# (a few words at most: a filler or a correction) and the first word of that part said again
_RESTARTED_PART = re.compile(
    rf"\b(hundred|{'|'.join(_SCALES)})((?:[\s-]+(?:{_PART_WORD})\b){{1,3}})([\s,]+[a-z\s,]{{1,16}}?)(?=\s*\b({_PART_WORD})\b)",
    re.I,
)
_RESTART = cues.pattern("number_restart")


def restarted_parts(text: str) -> str:
    """A number whose last part the speaker started, stopped and said again in full reads as
    one number: "sixteen million seven, I mean, seven hundred eighty-one thousand" is
    16,781,312 to a listener, not 16,000,007 taken back for 781,312. Only where the part is
    said again from its first word, after a filler or a correction (`number_restart` in
    cues.yaml).

    >>> restarted_parts("sixteen million seven i mean seven hundred eighty one thousand")
    'sixteen million seven hundred eighty one thousand'
    >>> restarted_parts("sixteen million seven, I mean, seventeen million")
    'sixteen million seven, I mean, seventeen million'
    """

    def again(m: re.Match[str]) -> str:
        said = re.split(r"[\s-]+", m.group(2).strip(" -"))
        if not _RESTART.match(m.group(3)) or said[0].lower() != m.group(4).lower():
            return m.group(0)
        return m.group(1)

    return _RESTARTED_PART.sub(again, text)


@functools.lru_cache(maxsize=4096)  # the same rubric points are read on every grade
def words_to_digits(text: str, *, determiners: bool = False) -> str:
    """Replace runs of number words with digits; then spoken exponents with e-notation.

    With `determiners`, a lone "one" that is a determiner or a pronoun ("one bad batch", "the
    one that diverged") stays a word: how numbers are read for checking a stated number.
    Matching words leaves it off, so that an answer and a rubric phrasing read alike."""
    text = re.sub(r"\ba hundred\b", "one hundred", text, flags=re.I)
    # "41 point six seven" -> "41.67"
    text = re.sub(
        rf"(\d+)\s+point((?:\s+(?:{'|'.join(w for w, v in _UNITS.items() if v < 10)}))+)\b",
        lambda m: m.group(1) + "." + "".join(str(_UNITS[w.lower()]) for w in m.group(2).split()),
        text,
        flags=re.I,
    )
    # "point oh six two five" (two digits or more, so "point one:" in a list stays a word)
    text = _LEADING_POINT.sub(_leading_point, text)
    tokens = _TOKEN.findall(text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        low = tokens[i].lower()
        if low == "zero" and _zero_is_a_name(tokens, i):
            out.append(tokens[i])  # "ZeRO-3", "zero stage two", "zero-shot": not 0
            i += 1
            continue
        if low in _UNITS or low in _TENS or (low in _SCALES and out and out[-1].strip()[-1:].isdigit()):
            run: list[str] = []
            where: list[int] = []  # the token index of each word in `run`
            j, last_word = i, i
            while j < len(tokens):
                t = tokens[j].lower()
                if t.isspace() or t == "-" or (t == "," and run and run[-1] in _SCALES):
                    j += 1
                    continue
                if (
                    t == "zero" and run and "point" not in run and _zero_is_a_name(tokens, j)
                    and not _zero_is_a_digit(tokens, j, run)
                ):  # fmt: skip
                    break  # "the three ZeRO stages"
                if t == "and" and run and _MIXED_TAIL.match("".join(tokens[j + 1 : j + 6])):
                    break  # "one and three quarters": 1, then its fraction
                if t == "and" and run and run[-1] != "hundred" and run[-1] not in _SCALES:
                    break  # "between two and four": two numbers ("a hundred and ten" is one)
                if t in _SCALES:
                    scales = [k for k, w in enumerate(run) if w in _SCALES]
                    if scales and _SCALES[run[scales[-1]]] <= _SCALES[t] and scales[-1] < len(run) - 1:
                        # "five thousand, five thousand steps": a second number, said again
                        del run[scales[-1] + 1 :], where[scales[-1] + 1 :]
                        last_word = where[-1]
                        break
                if t in _UNITS and run and _UNITS.get(run[-1], 0) >= 10 and "point" not in run:
                    break  # "log ten, two point three": no number says a word under twenty after ten to nineteen
                if t in _NUMBER_WORDS and not (t in ("and", "a", "half") and not run):
                    run.append(t)
                    where.append(j)
                    last_word = j
                    j += 1
                    continue
                break
            while run and run[-1] in ("and", "a", "point", "half"):
                run.pop()
                last_word -= 1
                while last_word > i and tokens[last_word].isspace():
                    last_word -= 1
            value = _run_value(run)
            if value is not None and not (determiners and run == ["one"] and _one_is_a_word(tokens, i, out)):
                out.append(value)
                i = last_word + 1
                continue
        out.append(tokens[i])
        i += 1
    text = "".join(out)
    text = _MIXED.sub(_mixed, text)  # "7 and a half" -> "7.5"
    # "to the negative fifth" -> "to the negative 5"
    text = _ORDINAL_POWER.sub(lambda m: m.group(1) + str(_ORDINALS[m.group(2).lower()]), text)
    # "7.5 e minus 5", "7.5 times 10 to the minus 5", "7.5 e to the minus 5", "3 times 10 to the 4",
    # "10 to the minus 8"
    text = re.sub(
        r"(\d+(?:\.\d+)?)\s*(?:e|(?:e|times\s+10|x\s+10)\s+to\s+the)\s*(?:minus|negative|-)\s*(\d+)",
        r"\1e-\2",
        text,
        flags=re.I,
    )
    text = re.sub(
        r"(\d+(?:\.\d+)?)\s+(?:e|times\s+10|x\s+10)\s+to\s+the\s+(?:power\s+of\s+)?(?:plus\s+)?(\d+)\b",
        r"\1e\2",
        text,
        flags=re.I,
    )
    text = re.sub(r"\b10\s+to\s+the\s+(?:minus|negative)\s+(\d+)", r"1e-\1", text, flags=re.I)
    text = re.sub(r"\b10\s+to\s+the\s+(\d+)", r"1e\1", text, flags=re.I)
    # "2 to the 10", "2 to the power of 10th" -> "2^10"; "1 over 16" -> "1/16"
    text = re.sub(
        r"\b(\d{1,3})\s+to\s+the\s+(?:power\s+of\s+)?(\d{1,2})(?:th)?\b", r"\1^\2", text, flags=re.I
    )
    return _ONE_OVER.sub(r"1/\1", text)


_FRACTION_NAMES = r"(?:half|halves|thirds?|quarters?|fifths?|eighths?|tenths?)"
_MIXED_TAIL = re.compile(rf"\s*(?:a|an|one|two|three|four|five|seven|\d)[\s-]+{_FRACTION_NAMES}\b", re.I)
_MIXED = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s+and\s+(a|\d)[\s-]+({_FRACTION_NAMES})\b", re.I)


def _mixed(m: re.Match[str]) -> str:
    """ "7 and a half" is 7.5, "1 and 3 quarters" 1.75."""
    top = 1 if m.group(2).lower() == "a" else int(m.group(2))
    return _short(float(m.group(1)) + top / _denominator(m.group(3)))


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12}  # fmt: skip
# a power only: "10 to the fifth", "2 to the ninth"; "moved to the second GPU" keeps its word
_ORDINAL_POWER = re.compile(
    rf"((?:\d|\be)\s+to\s+the\s+(?:minus\s+|negative\s+)?)({'|'.join(_ORDINALS)})\b", re.I
)
_ONE_OVER = re.compile(
    r"(?<![\d.])\b1\s+over\s+(\d+)\b(?!\s*(?:steps?|epochs?|minutes?|hours?|seconds?|days?|iterations?|"
    r"batch(?:es)?|tokens?|GPUs?|nodes?|runs?|times)\b)",
    re.I,
)


# unit word -> (canonical unit, factor into it)
_UNIT_ALIASES: dict[str, tuple[str, float]] = {
    "gb": ("GB", 1.0), "gigabytes": ("GB", 1.0), "gigabyte": ("GB", 1.0), "gigs": ("GB", 1.0), "gig": ("GB", 1.0),
    "gib": ("GB", 1.073741824), "gibibytes": ("GB", 1.073741824),
    "mb": ("GB", 1e-3), "megabytes": ("GB", 1e-3), "tb": ("GB", 1e3), "terabytes": ("GB", 1e3),
    "bytes": ("GB", 1e-9),
    "minutes": ("minutes", 1.0), "minute": ("minutes", 1.0), "min": ("minutes", 1.0),
    "mins": ("minutes", 1.0), "seconds": ("minutes", 1 / 60), "second": ("minutes", 1 / 60),
    "s": ("minutes", 1 / 60), "sec": ("minutes", 1 / 60), "secs": ("minutes", 1 / 60),
    "hours": ("minutes", 60.0), "hour": ("minutes", 60.0), "h": ("minutes", 60.0),
    "%": ("%", 1.0), "percent": ("%", 1.0), "per cent": ("%", 1.0),
    "x": ("x", 1.0), "times": ("x", 1.0), "fold": ("x", 1.0),
    "nats": ("nats", 1.0), "nat": ("nats", 1.0),
    "parameters": ("parameters", 1.0), "params": ("parameters", 1.0), "weights": ("parameters", 1.0),
    "steps": ("steps", 1.0), "step": ("steps", 1.0),
}  # fmt: skip
_MULTIPLIERS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "billion": 1e9}
_QUANTITY = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:e-?\d+)?|\.\d+)"
    r"\s*(?:(k|m|b|thousand|million|billion)\b)?\s*"
    r"(%|per cent|percent|gigabytes?|gib|gibibytes|gb|gigs?|megabytes|mb|terabytes|tb|bytes|minutes?|mins?"
    r"|seconds?|secs?|hours?|nats?|parameters|params|weights|steps?|fold|times(?!\s+\d)|x|s|h)?(?![\w])",
    re.I,
)


@dataclass(frozen=True)
class Quantity:
    value: float  # with any multiplier applied, in `unit` as written
    unit: str  # canonical unit ("GB", "minutes", ...) or ""
    factor: float  # multiply `value` by this to get `unit`
    text: str  # as it appears in the (normalised) answer


_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_POWER = re.compile(r"10\s*([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")  # "10⁻⁵"
_MINUS = str.maketrans({"−": "-", "–": "-", "⁄": "/"})  # minus signs, the fraction slash
# Typed typography: "16 781 312" grouped with thin or no-break spaces, "1½", "¾".
_NARROW_SPACES = "\u2009\u202f\u00a0"
_GROUPED = re.compile(rf"(?<![\d.,])\d{{1,3}}(?:[{_NARROW_SPACES}]\d{{3}})+(?!\d)")
_VULGAR = {"½": 1 / 2, "¼": 1 / 4, "¾": 3 / 4, "⅓": 1 / 3, "⅔": 2 / 3, "⅛": 1 / 8, "⅜": 3 / 8, "⅝": 5 / 8,
           "⅞": 7 / 8}  # fmt: skip
_VULGAR_FRACTION = re.compile(rf"(?:(?<![\w.])(\d+)[ {_NARROW_SPACES}]?)?([{''.join(_VULGAR)}])")
_NUM = r"\d+(?:\.\d+)?"
# "7.5 × 10^-5", "7.5x10^-5", "7.5 * 10**-5", "7.5·10⁻⁵" (superscripts read first)
_SCIENTIFIC = re.compile(rf"({_NUM})\s*(?:[x×*·]|times)\s*10\s*(?:\^|\*\*)\s*([-+]?\d+)\b", re.I)
_POWER = re.compile(r"(?<![\w.^])(\d{1,3})\s*(?:\^|\*\*)\s*([-+]?\d{1,2})\b")  # "2^9", "10^-5"
_FRACTION = re.compile(r"(?<![\w.,/])(\d{1,4})\s*/\s*(\d{1,5})(?![\w/]|\.\d)")  # "1/16", not "fp16/bf16"
_SPOKEN_FRACTION = re.compile(
    r"\b(a|one|\d{1,2})[\s-]+(half|halves|thirds?|quarters?|fifths?|eighths?|tenths?|sixteenths?"
    r"|hundredths?|thousandths?)\b",
    re.I,
)
_DENOMINATORS = {"half": 2, "third": 3, "quarter": 4, "fifth": 5, "eighth": 8, "tenth": 10,
                 "sixteenth": 16, "hundredth": 100, "thousandth": 1000}  # fmt: skip
# "41 minutes and 40 seconds", "41m40s", "1 h 20 min": one duration, not two numbers
_DURATION = re.compile(
    rf"(?:({_NUM})\s*(?:hours?|hrs?|h)\s*(?:and\s+)?)?({_NUM})\s*(?:minutes?|mins?|m)\s*(?:and\s+)?"
    rf"({_NUM})\s*(?:seconds?|secs?|s)\b|({_NUM})\s*(?:hours?|hrs?|h)\s*(?:and\s+)?({_NUM})\s*"
    rf"(?:minutes?|mins?|m)\b",
    re.I,
)


# Numbers typed as TeX ("$3 \times 10^{-4}$", "\frac{1}{16}", "2^{10}", "1{,}024") in plain form.
_TEX = [
    (re.compile(r"\\[dt]?frac\s*\{\s*([^{}]*?)\s*\}\s*\{\s*([^{}]*?)\s*\}"), r"\1/\2"),
    (re.compile(r"\\(?:text|mathrm|mathit|mathbf|operatorname|rm)\s*\{([^{}]*)\}"), r" \1"),
    (re.compile(r"\^\s*\{\s*([-+−]?)\s*(\d+)\s*\}"), r"^\1\2"),
    (re.compile(r"\\(?:times|cdot)(?![a-zA-Z])"), " × "),
    (re.compile(r"\\(?:approx|sim)(?![a-zA-Z])"), " ~ "),
    (re.compile(r"\{,\}"), ","),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\[,;:! ]|\\[()\[\]]|\$+"), " "),
]


def plain_math(text: str) -> str:
    r"""TeX math as plain text, so its numbers read like typed ones.

    >>> plain_math(r"$3 \times 10^{-4}$, \frac{1}{16}, 2^{10}, 16\,\text{GB}")
    ' 3  ×  10^-4 , 1/16, 2^10, 16  GB'
    """
    if "\\" not in text and "$" not in text and "^{" not in text and "{,}" not in text:
        return text
    for pattern, repl in _TEX:
        text = pattern.sub(repl, text)
    return text


def _short(x: float) -> str:
    return f"{x:.10g}"


def _duration(m: re.Match[str]) -> str:
    if m.group(3) is not None:  # [h] m s
        minutes = float(m.group(1) or 0) * 60 + float(m.group(2)) + float(m.group(3)) / 60
    else:  # h m
        minutes = float(m.group(4)) * 60 + float(m.group(5))
    return f"{_short(minutes)} minutes"


def _power(m: re.Match[str]) -> str:
    base, exp = int(m.group(1)), int(m.group(2))
    if base == 10:
        return f"1e{exp}"
    return _short(float(base) ** exp) if base > 1 and 0 < exp <= 40 else m.group(0)


def _fraction(m: re.Match[str]) -> str:
    top, bottom = int(m.group(1)), int(m.group(2))
    return _short(top / bottom) if bottom else m.group(0)


def _spoken_fraction(m: re.Match[str]) -> str:
    """ "a sixteenth", "3 quarters" (words_to_digits has already turned "three" into "3")."""
    top = 1 if m.group(1).lower() in ("a", "one") else int(m.group(1))
    return _short(top / _denominator(m.group(2)))


def _denominator(name: str) -> int:
    """ "quarters" -> 4, "halves" -> 2."""
    name = name.lower()
    return _DENOMINATORS["half" if name == "halves" else name.removesuffix("s")]


@functools.lru_cache(maxsize=4096)
def written_numbers(text: str) -> str:
    """Written forms that are one number, as one number: scientific notation, powers,
    fractions and compound durations.

    >>> written_numbers("7.5 × 10⁻⁵, 2^9, 1/16, a sixteenth, 41 minutes and 40 seconds")
    '7.5e-5, 512, 0.0625, 0.0625, 41.66666667 minutes'
    >>> written_numbers("16\u2009781\u2009312 weights, 1½ epochs, ¾ of it, 1⁄16")
    '16781312 weights, 1.5 epochs, 0.75 of it, 0.0625'
    """
    text = plain_math(text).translate(_MINUS)
    text = _GROUPED.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)
    text = _VULGAR_FRACTION.sub(lambda m: _short(int(m.group(1) or 0) + _VULGAR[m.group(2)]), text)
    text = _SUPERSCRIPT_POWER.sub(lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), text)
    text = _SCIENTIFIC.sub(lambda m: f"{m.group(1)}e{m.group(2).lstrip('+')}", text)
    text = _POWER.sub(_power, text)
    text = _FRACTION.sub(_fraction, text)
    text = _SPOKEN_FRACTION.sub(_spoken_fraction, text)
    return _DURATION.sub(_duration, text)


def _located_quantities(text: str) -> tuple[str, list[tuple[Quantity, int, int]]]:
    """The normalised text and every number in it, with where it stands."""
    norm = written_numbers(words_to_digits(text, determiners=True))
    out = []
    for m in _QUANTITY.finditer(norm):
        number, mult, unit = m.group(1), (m.group(2) or "").lower(), (m.group(3) or "").lower()
        try:
            value = float(number.replace(",", ""))
        except ValueError:
            continue
        if mult:
            value *= _MULTIPLIERS[mult]
        canonical, factor = _UNIT_ALIASES.get(unit, ("", 1.0))
        out.append((Quantity(value, canonical, factor, m.group(0).strip()), m.start(), m.end()))
    return norm, out


def extract_quantities(text: str) -> list[Quantity]:
    """Every number in the text, with multiplier and unit when present."""
    return [q for q, _, _ in _located_quantities(text)[1]]


# A speaker taking a number back: the cue opens the words between two numbers ("zero point
# seven, no sorry, seven point five e minus five"; "ten percent, I mean five").
_CORRECTION = cues.pattern("number_correction")
# Two numbers offered for one thing: "one or two", "maybe ten, or maybe twenty".
_HEDGE = cues.pattern("number_alternatives")
_NO_WORDS = re.compile(r"^[^A-Za-z]*$")
# words allowed between the cue and the corrected number ("actually wait, I double counted
# the bias, it's ...")
MAX_CORRECTION_WORDS = 8


def _restarts(first: str, second: str) -> bool:
    """ "2.3" then "2.303": the speaker started the number, stopped and said it in full."""
    a, b = re.sub(r"[^\d.]", "", first), re.sub(r"[^\d.]", "", second)
    return bool(a) and len(b) > len(a) and b.startswith(a)


@dataclass(frozen=True)
class SpokenNumbers:
    """The numbers a listener takes the speaker to commit to, and the ones offered as alternatives."""

    committed: list[Quantity]
    hedges: list[tuple[Quantity, Quantity]]  # "one or two": neither is committed to alone


def committed_numbers(text: str) -> SpokenNumbers:
    """The numbers the speaker finally commits to: one taken back ("seven, no sorry, eight"),
    one started and said again in full ("two point three, two point three zero three") and
    one said twice count once, as the last said.

    >>> [q.value for q in committed_numbers("it's 0.7 no sorry 7.5e-5").committed]
    [7.5e-05]
    >>> [q.value for q in committed_numbers("from 0 up to 3e-4").committed]
    [0.0, 0.0003]
    >>> [(a.value, b.value) for a, b in committed_numbers("it is 1 or 2").hedges]
    [(1.0, 2.0)]
    """
    norm, found = _located_quantities(text)
    kept: list[tuple[Quantity, int, int]] = []
    hedges = []
    for q, start, end in found:
        if kept:
            previous, _, previous_end = kept[-1]
            gap = norm[previous_end:start]
            after_cue = _CORRECTION.match(gap)
            if after_cue and len(re.findall(r"[A-Za-z]+", gap[after_cue.end() :])) <= MAX_CORRECTION_WORDS:
                kept.pop()  # taken back
            elif _NO_WORDS.match(gap) and (
                same_value(previous.value, q.value) or _restarts(previous.text, q.text)
            ):
                kept.pop()  # said twice, or restarted
            elif (
                _HEDGE.match(gap)
                and (not previous.unit or not q.unit or previous.unit == q.unit)  # "thirty or fifty percent"
                and not same_value(previous.value, q.value)
            ):
                hedges.append((previous, q))
        kept.append((q, start, end))
    return SpokenNumbers([q for q, _, _ in kept], hedges)


def same_value(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), 1)


def _readings(q: Quantity, target: NumericTarget) -> list[float]:
    """The values `q` can mean in the target's unit (the check keeps the closest)."""
    want = _UNIT_ALIASES.get(target.unit.lower(), (target.unit, 1.0))
    if q.unit and q.unit == want[0]:
        return [q.value * q.factor / want[1]]
    if q.unit == "%" and not target.unit:
        return [q.value / 100]  # "6.25 %" of a plain fraction 0.0625
    if want[0] == "%" and not q.unit and 0 < q.value < 1:
        return [q.value, q.value * 100]  # "a tenth of every batch" is 10 %
    return [q.value]


_MULTIPLE_WORDS = {
    **dict.fromkeys(("twice", "double", "doubles", "doubled", "doubling"), 2.0),
    **dict.fromkeys(("thrice", "triple", "triples", "tripled", "tripling"), 3.0),
    **dict.fromkeys(("quadruple", "quadruples", "quadrupled", "quadrupling"), 4.0),
    **dict.fromkeys(("halve", "halves", "halved", "halving"), 0.5),
}
_MULTIPLE = re.compile(rf"\b(?:{'|'.join(_MULTIPLE_WORDS)})\b", re.I)


def multiples(text: str) -> list[Quantity]:
    """Factors said in words: "twice as fast" is 2x, "quadruple the batch" 4x."""
    return [
        Quantity(_MULTIPLE_WORDS[m.group().lower()], "x", 1.0, m.group()) for m in _MULTIPLE.finditer(text)
    ]


def check_numeric(answer: str, target: NumericTarget) -> NumericCheck:
    """Does the answer state the target number (in a compatible unit, within tolerance)?
    A factor ("1.75x") may also be said in words ("about twice as fast")."""
    best: tuple[float, Quantity, float] | None = None
    spoken = committed_numbers(answer)
    said = list(spoken.committed)
    if _UNIT_ALIASES.get(target.unit.lower(), (target.unit, 1.0))[0] == "x":
        said += multiples(answer)
    for q in said:
        for value in _readings(q, target):
            err = abs(value - target.value)
            if best is None or err < best[0]:
                best = (err, q, value)
    verdict = "missing" if best is None else "correct" if target.accepts(best[2]) else "incorrect"
    found_text = "" if best is None else best[1].text
    for a, b in spoken.hedges:
        if best is not None and (best[1] is a or best[1] is b) and verdict == "correct":
            other = b if best[1] is a else a
            if not any(target.accepts(v) for v in _readings(other, target)):
                verdict, found_text = (
                    "incorrect",
                    f"{a.text} or {b.text}",
                )  # not credited with the one that fits
    return NumericCheck(
        target=target.value,
        unit=target.unit,
        tolerance=target.tolerance,
        found=None if best is None else (best[2] if math.isfinite(best[2]) else None),
        found_text=found_text,
        verdict=verdict,  # type: ignore[arg-type]
    )
