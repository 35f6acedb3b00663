"""The embedded default grader: no LLM, no key, deterministic.

For each rubric key point it finds the answer span (sentence, clause or word
window) that best expresses it, by sentence-embedding similarity to the point
and its accepted alternatives, plus IDF-weighted word overlap, a soft
(BERTScore-style) word match on contextual token vectors, and how much closer the
span is to this point than to any other point or the question, and the best
span's similarity under a second, static embedding model (WordLlama, which reads
rewordings differently from MiniLM). A logistic curve
fitted on the eval set's calibration split (`calibration.json`, written by
`evals/calibrate.py`) turns these into a credit in [0, 1]. Negation is
checked on the matched span, so "do not restart from scratch" does not state
the misconception "restart from scratch"; and a misconception is told from the
key point it contradicts by the words that are its own. An answer is off-topic
when it is far from the whole rubric and from the question itself, and fits another
question's reference answer better than this one's. Scores come from the shared
aggregator in `grade.py`.

It does not phrase questions or follow-ups; it only grades.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from interviewer.corpus.bank import load_bank
from interviewer.corpus.schema import Question
from interviewer.grading.calibration import (
    Calibration,
    MisconceptionFeatures,
    PointFeatures,
    load_calibration,
)
from interviewer.grading.covariation import read_covariation
from interviewer.grading.decision import EMPTY_FLAGS, POLARITY_GATE, Analysis, decide, same_outcome
from interviewer.grading.grade import (
    INJECTION_FLAG,
    Grade,
    NumericCheck,
)
from interviewer.grading.names import read_named_roles, read_number_roles, read_other_names
from interviewer.grading.numbers import check_numeric, extract_quantities, same_value
from interviewer.grading.order import read_order
from interviewer.grading.roles import read_roles
from interviewer.grading.substitution import read_points
from interviewer.grading.text import (
    IDF,
    Span,
    asking_spans,
    clean,
    content_stems,
    identifiers_agree,
    is_negated,
    looks_like_gibberish,
    names_agree,
    plain_markdown,
    refuting_spans,
    rejected_claim_negated,
    rejection_only_spans,
    says_dont_know,
    segment,
    sentence_of,
    strip_injections,
    word_stems,
    words,
)
from interviewer.grading.verify import second_reader
from interviewer.models.embeddings import cpu_has_native_bf16, embedder_for, unit
from interviewer.models.polarity import PolarityReader, polarity_reader
from interviewer.models.support import support_reader
from interviewer.models.word_vectors import word_vectors
from interviewer.settings import Settings

# A sentence that rejects a claim rejects the one it is closest to; a point and a misconception
# this close to it are both rejected (a set constant, not fitted: 1 of the 520 calibration
# answers rejects anything).
REJECTION_TIE = 0.05
# A sentence that rejects a right claim says the wrong one when it is at least this similar to
# the right claim (a set constant, not fitted: too few answers reject anything to fit it on).
REJECTED_GATE = 0.6
MAX_CHARS = 20_000  # longer answers are graded on their first 20k characters (flagged)
# At most this many (claim, sentence) pairs per grade, the closest first: four cost about 18 ms
# in bfloat16 on two cores, ten 43 ms, and the grade's budget is 60 ms at p95.
MAX_READS = 4  # pairs: a claim with a twin takes two (claim and twin against the sentence)


def numbers_agree(phrasings: list[str], span: str) -> bool:
    """A claim with a number is only stated by a span that says one of its numbers."""
    said = {q.value for q in extract_quantities(clean(span, determiners=True))}
    for phrase in phrasings:
        claimed = {q.value for q in extract_quantities(phrase)}
        if not claimed or any(same_value(c, v) for c in claimed for v in said):
            return True
    return False


def _restated(found: str, question: Question) -> bool:
    """The number found is one the question gives: "You raise the batch size from 256 to
    1,024 ..." answered with "keep the LR when the batch grows to 1024" restates 1,024."""
    given = [q.value for q in extract_quantities(clean(getattr(question, "question", "")))]
    return any(same_value(q.value, g) for q in extract_quantities(found) for g in given)


def rival_point(claim: list[str], point_stems: list[set[str]]) -> int | None:
    """The key point a wrong claim contradicts: the one (its content stems in `point_stems`)
    sharing the largest share of its words with the claim's phrasings; None where none shares any.

    >>> rival_point(["use a bigger model to reduce overfitting"], [{"data", "more"}, {"model", "smaller"}])
    1
    """
    mine = set().union(*(content_stems(clean(p)) for p in claim))
    shares = [len(k & mine) / max(len(k), 1) for k in point_stems]
    return max(range(len(shares)), key=shares.__getitem__) if shares and max(shares) > 0 else None


def distinctiveness(point_sims: np.ndarray, question_sims: np.ndarray) -> np.ndarray:
    """Per key point: how much closer some span of the answer is to it than to any other
    key point of the rubric or to the question itself.

    A rewording lowers every similarity at once ("it rescales and shifts the result with
    two trainable parameters" is only 0.52 from "a learned scale and shift are applied"),
    but the point it states stays the one it is closest to. `point_sims` is (points, spans),
    `question_sims` (spans,).
    """
    if not point_sims.size:
        return np.zeros(len(point_sims), dtype=np.float32)
    ranked = np.sort(point_sims, axis=0)
    best = ranked[-1]
    second = ranked[-2] if len(ranked) > 1 else np.full_like(best, -np.inf)
    # each point's closest rival at each span: the best other point, or the question
    rivals = np.maximum(np.where(point_sims >= best, second, best), question_sims)
    return (point_sims - rivals).max(axis=1).astype(np.float32)


def rejections(
    spans: list[Span], kp_groups: list[list[str]], mc_groups: list[list[str]], kp_sims: np.ndarray,
    mc_sims: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(points, spans) and (misconceptions, spans): where the answer rejects that claim.

    A sentence that rejects ("a common myth is that ...", `refuting_spans`) rejects the claim
    it is closest to (`kp_sims`, `mc_sims`: similarities before any polarity penalty, since
    the rejecting words read as a negation): "it's a myth that FP8 needs scaling factors"
    rejects the point "FP8 needs per-tensor scaling factors", so it covers no point and
    states the misconception "FP8 needs no scaling"; "a common myth is that FP8 needs no
    scaling" is the reverse. A sentence that only rejects the one before it ("Don't believe
    it.", `rejection_only_spans`) states no claim of its own.
    """
    only = np.array(rejection_only_spans(spans), dtype=bool)

    def rejected(groups: list[list[str]], sims: np.ndarray, rivals: np.ndarray) -> np.ndarray:
        out = np.zeros((len(groups), len(spans)), dtype=bool)
        for g, group in enumerate(groups):
            said = np.array(refuting_spans(spans, {w.lower() for p in group for w in words(p)}))
            if said.any():
                # within REJECTION_TIE of the closest claim of the other kind counts as closest:
                # a rejection that reads as both ("bf16 needs loss scaling ... does not hold"
                # against "bf16 rarely needs loss scaling") states neither
                closest = sims[g] >= (rivals.max(axis=0) - REJECTION_TIE if len(rivals) else -np.inf)
                out[g] = said & (closest | only)
        return out

    return rejected(kp_groups, kp_sims, mc_sims), rejected(mc_groups, mc_sims, kp_sims)


def rejected_right_claims(
    rejected_points: np.ndarray, kp_raw: np.ndarray, mc_raw: np.ndarray, twin_raw: np.ndarray
) -> tuple[list[int | None], list[int | None]]:
    """Where the answer rejects a right claim, and so states a wrong one.

    `rejected_points` (points, spans) is `rejections`' verdict; `kp_raw`, `mc_raw` and
    `twin_raw` are the spans' similarities (before any polarity penalty) to the key points,
    the misconceptions and the misconceptions' corrected twins. Returns, per key point, the
    span that rejects it ("it's a myth that FP8 needs per-tensor scaling factors"), and per
    misconception, the span that rejects its corrected twin, which states it. Either span is
    at least REJECTED_GATE similar to the right claim it rejects (the twin: closer to it than
    to any other twin), and closer to it than to every misconception by more than
    REJECTION_TIE: a rejection that reads as both a right and a wrong claim states neither.
    None where nothing is rejected."""
    points: list[int | None] = [None] * kp_raw.shape[0]
    nearest_wrong = mc_raw.max(axis=0) if mc_raw.shape[0] else np.full(kp_raw.shape[1], -np.inf)
    for k in range(kp_raw.shape[0]):
        at = np.flatnonzero(
            rejected_points[k] & (kp_raw[k] >= REJECTED_GATE) & (kp_raw[k] > nearest_wrong + REJECTION_TIE)
        )
        points[k] = int(at[kp_raw[k, at].argmax()]) if at.size else None
    wrong: list[int | None] = [None] * mc_raw.shape[0]
    rejecting = rejected_points.any(axis=0)
    twin = np.nan_to_num(twin_raw, nan=-1.0)
    nearest_twin = twin.max(axis=0) if twin.shape[0] else twin.sum(axis=0)
    for m in range(mc_raw.shape[0]):
        if not np.isfinite(twin_raw[m]).any():
            continue
        at = np.flatnonzero(
            rejecting
            & (twin[m] >= REJECTED_GATE)
            & (twin[m] >= nearest_twin)
            & (twin[m] > nearest_wrong + REJECTION_TIE)
        )
        wrong[m] = int(at[twin[m, at].argmax()]) if at.size else None
    return points, wrong


@dataclass(frozen=True)
class Rejections:
    """What an answer's rejecting sentences reject (`RubricGrader._rejections`)."""

    points: np.ndarray  # (points, spans): the span rejects that key point
    misconceptions: np.ndarray  # (misconceptions, spans): the span rejects that misconception
    point_at: list[int | None]  # per key point, the span that rejects it (`rejected_right_claims`)
    twin_at: list[int | None]  # per misconception, the span that rejects its corrected twin


# (kind "point" | "misconception", index, claim, its twin or "", the span's sentence, similarity)
ToRead = tuple[str, int, str, str, str, float]


def choose_reads(to_read: list[ToRead]) -> list[ToRead]:
    """The claims the polarity reader reads: the closest first, MAX_READS pairs in all (a claim
    with a twin takes two)."""
    chosen, pairs = [], 0
    for item in sorted(to_read, key=lambda r: -r[5]):
        need = 2 if item[3] else 1
        if pairs + need > MAX_READS:
            continue
        chosen.append(item)
        pairs += need
    return chosen


def _bfloat16(settings: Settings) -> bool:
    """The embedding model's precision rule, for the polarity reader too."""
    return settings.embedding_precision == "bfloat16" or (
        settings.embedding_precision == "auto" and cpu_has_native_bf16()
    )


@dataclass(frozen=True)
class Screening:
    """What an answer is before any model reads it: the text as graded, its flags (empty,
    no answer, gibberish, not English, truncated, an injection removed) and its number."""

    text: str  # printable, at most MAX_CHARS, injections removed, markdown made plain
    cleaned: str  # `text` as the matchers read it (`text.clean`)
    flags: list[str]
    numeric: NumericCheck | None

    @property
    def nothing_to_grade(self) -> bool:
        return bool(set(self.flags) & EMPTY_FLAGS)


def screen_answer(question: Question, answer: str) -> Screening:
    """The grader's cheap gates, shared by every grader: no model is loaded or run.

    >>> from types import SimpleNamespace
    >>> q = SimpleNamespace(rubric=SimpleNamespace(numeric=None))  # only the numeric target is read
    >>> screen_answer(q, "I don't know").flags, screen_answer(q, "Warm up first.").flags
    (['no-answer'], [])
    """
    flags: list[str] = []
    text = (answer or "").replace("\x00", " ")
    text = "".join(ch for ch in text if ch.isprintable() or ch in "\n\t")
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS]
        flags.append("truncated")
    text, injected = strip_injections(text)
    if injected:
        flags.append(INJECTION_FLAG)
    text = plain_markdown(text)
    cleaned = clean(text)
    # the number read as a listener hears it: "one bad batch" states no 1
    target = question.rubric.numeric
    numeric = check_numeric(clean(text, determiners=True), target) if target else None
    if numeric is not None and numeric.verdict == "incorrect" and _restated(numeric.found_text, question):
        numeric = numeric.model_copy(update={"restated": True})
    letters = [ch for ch in cleaned if ch.isalpha()]
    if letters and sum(ch.isascii() for ch in letters) < 0.5 * len(letters):
        flags.append("not-english")  # the rubric is English: say so rather than "no answer"
    elif not cleaned or not content_stems(cleaned):
        flags.append("empty")
    elif says_dont_know(cleaned):
        flags.append("no-answer")
    elif looks_like_gibberish(cleaned):
        flags.append("gibberish")
    return Screening(text=text, cleaned=cleaned, flags=flags, numeric=numeric)


class RubricGrader:
    name = "rubric"

    def __init__(self, settings: Settings, calibration: Calibration | None = None) -> None:
        self.settings = settings
        self.calibration = calibration or load_calibration(claim_reader=bool(settings.claim_reader))
        self.embedder = embedder_for(settings)
        self.words = word_vectors()
        reader = polarity_reader(threads=settings.embedding_threads, bfloat16=_bfloat16(settings))
        self.polarity: PolarityReader | None = reader if reader.available else None
        # opt-in: a small language model reads what the answer makes likely (models/support.py)
        self.support = (
            support_reader(settings.claim_reader, settings.embedding_threads)
            if settings.claim_reader
            else None
        )
        self.second = second_reader(settings)  # None unless INTERVIEWER_VERIFY names an LLM backend
        self._idf: IDF | None = None
        self._saved_loaded = False
        self._weights: dict[tuple[str, frozenset[str]], np.ndarray] = {}
        self._references: tuple[list[str], np.ndarray] | None = None
        self._loading = threading.Lock()  # one thread loads; the others' first grades wait for it

    @property
    def idf(self) -> IDF:
        if self._idf is None:
            bank = load_bank(self.settings)
            self._idf = IDF([q.reference for q in bank] + [q.question for q in bank])
        return self._idf

    # -- the pieces -------------------------------------------------------

    def _similarity(
        self,
        groups: list[list[str]],
        spans: list[Span],
        span_vecs: np.ndarray,
        static_vecs: np.ndarray | None = None,
        polarity: bool = True,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(items, spans) twice: each span's similarity to the item's closest phrasing,
        under MiniLM (`span_vecs`) and, when given, under the static WordLlama vectors
        (`static_vecs`; else None).

        A span whose negation differs from the phrasing's loses `polarity_penalty`,
        so "do not restart from scratch" is far from "restart from scratch".
        """
        if not groups:
            empty = np.zeros((0, len(spans)), dtype=np.float32)
            return empty, None if static_vecs is None else empty
        flat = [p for group in groups for p in group]
        # Opposite polarity only matters when the span and the phrasing say the same
        # words ("not restart from scratch" vs "restart from scratch"); a paraphrase
        # that happens to contain "not" elsewhere is not a contradiction.
        span_neg = np.array([is_negated(s.text) for s in spans])
        phrase_neg = np.array([is_negated(p) for p in flat])
        span_stems = [set(content_stems(clean(s.text))) for s in spans]
        phrase_stems = [set(content_stems(clean(p))) for p in flat]
        shared = np.array(
            [[len(a & b) / max(len(b), 1) for b in phrase_stems] for a in span_stems], dtype=np.float32
        )
        flipped = span_neg[:, None] != phrase_neg[None, :]
        penalty = self.calibration.polarity_penalty * shared * flipped * polarity  # (spans, phrasings)

        def best_phrasing(sims: np.ndarray) -> np.ndarray:
            out = np.empty((len(groups), len(spans)), dtype=np.float32)
            col = 0
            for g, group in enumerate(groups):
                out[g] = sims[:, col : col + len(group)].max(axis=1)
                col += len(group)
            return out

        contextual = best_phrasing(span_vecs @ self.embedder.encode(flat).T - penalty)
        if static_vecs is None:
            return contextual, None
        return contextual, best_phrasing(static_vecs @ self._static_phrasings(flat).T - penalty)

    def _read_polarity(self, analysis: Analysis, chosen: list[ToRead]) -> Analysis:
        """`analysis` with each chosen claim's `polarity` read: how much more the polarity reader
        reads its sentence as stating the claim than as stating its twin (or, with no twin, as
        stating than as contradicting it). Comparing with the twin cancels what the two share:
        a sentence that says three things reads as "contradicts" for any one of them about as
        much as for its twin."""
        assert self.polarity is not None
        if not chosen:
            return analysis
        batch = [(claim, sentence) for _, _, claim, twin, sentence, _ in chosen]
        batch += [(twin, sentence) for _, _, _, twin, sentence, _ in chosen if twin]
        readings = self.polarity.read(batch)
        twins = iter(readings[len(chosen) :])
        key_points, misconceptions = list(analysis.key_points), list(analysis.misconceptions)
        for (kind, n, _, twin, _, _), reading in zip(chosen, readings, strict=False):
            lean = reading.states - next(twins).states if twin else reading.lean
            if kind == "point":
                key_points[n] = replace(key_points[n], polarity=lean)
            else:
                misconceptions[n] = replace(misconceptions[n], polarity=lean)
        return replace(analysis, key_points=key_points, misconceptions=misconceptions)

    def _reads_matter(self, question: Question, analysis: Analysis, chosen: list[ToRead]) -> bool:
        """Whether any reading of the chosen claims could change what the grade tells the
        candidate (`same_outcome`). A reading (a lean in [-1, 1]) enters the grade through a
        point's credit and a misconception's detector, each a logit linear in it, and from
        there through thresholds (a point's status, the swap rule's gate, a misconception's
        verdict) and an aggregate that more credit never lowers and a stated misconception
        never raises. So the grade with every chosen claim read the way that helps the answer
        most, and the one with every claim read the way that hurts it most, bound what any
        reading could give: where the two tell the same, the reads are skipped. Over the
        2,306 eval, probe and reference texts this skips four grades' reads in five (about
        15 ms a grade on two cores) and changes no outcome; a skipped point's confidence
        stays as unread, at most 0.03 from the read value (`tests/test_polarity.py`)."""
        c = self.calibration
        helps = (math.copysign(1.0, c.points.polarity), -math.copysign(1.0, c.misconceptions.polarity))

        def read_as(sign: float) -> Analysis:
            key_points, misconceptions = list(analysis.key_points), list(analysis.misconceptions)
            for kind, n, *_ in chosen:
                if kind == "point":
                    key_points[n] = replace(key_points[n], polarity=sign * helps[0])
                else:
                    misconceptions[n] = replace(misconceptions[n], polarity=sign * helps[1])
            return replace(analysis, key_points=key_points, misconceptions=misconceptions)

        best, worst = (self.decide(question, read_as(sign)) for sign in (1.0, -1.0))
        return not same_outcome(best, worst)

    def _twin_similarity(self, twins: list[str], spans: list[Span], span_vecs: np.ndarray) -> np.ndarray:
        """(claims, spans): each span's similarity to the claim's twin (NaN for a claim with none)."""
        out = np.full((len(twins), len(spans)), np.nan, dtype=np.float32)
        have = [n for n, t in enumerate(twins) if t]
        if have:
            sims, _ = self._similarity([[twins[n]] for n in have], spans, span_vecs)
            out[have] = sims
        return out

    def _rejections(
        self,
        spans: list[Span],
        kp_groups: list[list[str]],
        mc_groups: list[list[str]],
        span_vecs: np.ndarray,
        refuting: list[bool],
        twins: list[str],
    ) -> Rejections:
        """`rejections` and `rejected_right_claims` (`twins`: the misconceptions' corrected twins),
        with the similarities they need computed only for an answer that rejects something
        (`refuting`: `refuting_spans(spans, set())`, the spans that reject any claim)."""
        if not any(refuting):
            return Rejections(
                np.zeros((len(kp_groups), len(spans)), bool),
                np.zeros((len(mc_groups), len(spans)), bool),
                [None] * len(kp_groups),
                [None] * len(mc_groups),
            )
        kp_raw, _ = self._similarity(kp_groups, spans, span_vecs, polarity=False)
        mc_raw, _ = self._similarity(mc_groups, spans, span_vecs, polarity=False)
        kp_rejected, mc_rejected = rejections(spans, kp_groups, mc_groups, kp_raw, mc_raw)
        twin_raw = np.full((len(twins), len(spans)), np.nan, dtype=np.float32)
        have = [n for n, t in enumerate(twins) if t]
        if have:
            twin_raw[have], _ = self._similarity([[twins[n]] for n in have], spans, span_vecs, polarity=False)

        def fits(group: list[str], j: int) -> bool:
            """The span rejects this claim, not its opposite or a claim about another format:
            "it's a myth that bf16 needs loss scaling" rejects no "bf16 doesn't need loss scaling"."""
            inner = rejected_claim_negated(spans[j].text)
            return is_negated(group[0]) == inner and identifiers_agree(group, spans[j].text)

        rejecting = [j for j in range(len(spans)) if refuting[j]]
        for k, group in enumerate(kp_groups):
            for j in rejecting:
                if kp_rejected[k, j] and not fits(group, j):
                    kp_raw[k, j] = -1.0  # still no evidence for the point; only no wrong claim read
        for n in have:
            for j in rejecting:
                if not fits([twins[n]], j):
                    twin_raw[n, j] = np.nan
        return Rejections(
            kp_rejected, mc_rejected, *rejected_right_claims(kp_rejected, kp_raw, mc_raw, twin_raw)
        )

    def _static_phrasings(self, phrasings: list[str]) -> np.ndarray:
        """Rubric phrasings' WordLlama vectors, kept once computed."""
        return self.words.encode([clean(p) or p for p in phrasings], cache=True)

    def _overlap(self, group: list[str], answer_stems: set[str], demote: set[str]) -> float:
        return max(self.idf.recall(p, answer_stems, demote) for p in group)

    def _own_words(
        self, group: list[str], point_stems: list[set[str]], question_stems: set[str], spans: list[Span],
        span_stems: list[set[str]],
    ) -> tuple[float, float]:  # fmt: skip
        """How much of a misconception's own wording the answer says.

        A misconception shares its topic words with the key point it contradicts
        ("never reaching a plateau means the run has failed" against "never
        reaching the plateau means you are compute-limited"); only its own words,
        in no key point and not in the question ("run", "failed"), tell which
        claim is made. Returns (the IDF-weighted share of those words said in one
        span, halved when that span's negation differs from the claim's; the share
        said anywhere in the answer minus the share of the contradicted point's
        own words said anywhere). The contradicted point is the one sharing most
        of its words with the misconception.
        """
        mine = set().union(*(content_stems(clean(p)) for p in group))
        own = mine - set().union(*point_stems) - question_stems
        if not own:
            return 0.0, 0.0
        k = rival_point(group, point_stems)
        rival = point_stems[0 if k is None else k] if point_stems else set()  # none shares any: the first
        theirs = rival - mine - question_stems
        best = 0.0
        for span, stems in zip(spans, span_stems, strict=True):
            share = self.idf.share(own, stems)
            if is_negated(span.text) != is_negated(group[0]):
                share *= 0.5
            best = max(best, share)
        said = set().union(*span_stems)
        return best, self.idf.share(own, said) - self.idf.share(theirs, said)

    def _elsewhere(self, question: Question, answer_vec: np.ndarray) -> float | None:
        """The answer's best similarity to the reference answer of another bank question.

        An answer far from every point of the rubric is off-topic only when it fits
        another question better: a terse but right "put items in at one end and remove
        the oldest" (against the reference "enqueue and dequeue") is far from that
        reference, yet it answers nothing else. None when the bank holds no other
        question. The bank's references are stacked into one matrix once per grader.
        """
        questions, vectors = self._reference_vectors()
        others = [i for i, text in enumerate(questions) if text != question.question]
        return float((vectors[others] @ answer_vec).max()) if others else None

    def _reference_vectors(self) -> tuple[list[str], np.ndarray]:
        """The bank's questions and their reference answers' vectors, embedded once."""
        if self._references is None:
            bank = list(load_bank(self.settings))
            self._references = ([q.question for q in bank], self.embedder.encode([q.reference for q in bank]))
        return self._references

    def load(self) -> None:
        """Load, once, what every grade needs: both models, the bank's word weights and its
        reference answers' vectors. `grade` calls it before starting its clock, so a grade's
        `latency_ms` is the grade's own work, not a first call's loading (15-20 s here).

        Sessions that start together grade together: without the lock each of their first
        grades embedded the bank's reference answers again, and 16 sessions' first answers
        took 18 s on a fresh data directory (`interviewer bench`)."""
        if self._references is not None:
            return
        with self._loading:
            if self._references is not None:
                return
            _ = self.embedder.model, self.words.model, self.idf
            if self.polarity is not None:
                self.polarity.read([("warm-up", "warm-up")])
            if not self._saved_loaded:  # the references' vectors are among those `interviewer index` saved
                self._load_saved()  # (0.1 s, where embedding them again took 1.6 s)
            self._reference_vectors()

    def _embed_spans(self, spans: list[Span]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(span vectors, whole-answer vector, each sentence's token vectors) from one
        forward pass per sentence.

        Clauses and windows lie inside a sentence, so their vectors are pooled
        from the sentence's own token vectors (`Embedder.encode_parts`). The
        whole answer's vector is the length-weighted mean of its sentences'.
        """
        sentences = [i for i, s in enumerate(spans) if s.level == "sentence"]
        texts = [clean(spans[i].text) or spans[i].text for i in sentences]
        ranges: list[list[tuple[int, int]]] = [[] for _ in sentences]
        where: dict[int, tuple[int, int]] = {}  # span index -> (sentence number, part number)
        alone: list[int] = []
        for j, span in enumerate(spans):
            if span.level == "sentence":
                continue
            k = next((n for n, i in enumerate(sentences) if spans[i].start <= span.start
                      and span.end <= spans[i].end), None)  # fmt: skip
            part = clean(span.text) or span.text
            at = texts[k].find(part) if k is not None else -1
            if k is None or at < 0:
                alone.append(j)
                continue
            where[j] = (k, len(ranges[k]))
            ranges[k].append((at, at + len(part)))
        whole, parts, tokens = self.embedder.encode_parts(texts, ranges)
        alone_vecs = self.embedder.encode([clean(spans[j].text) or spans[j].text for j in alone], cache=False)
        dim = whole.shape[1] if len(whole) else alone_vecs.shape[1]
        out = np.zeros((len(spans), dim), dtype=np.float32)
        for n, i in enumerate(sentences):
            out[i] = whole[n]
        for j, (k, p) in where.items():
            out[j] = parts[k][p]
        for n, j in enumerate(alone):
            out[j] = alone_vecs[n]
        weights = np.array([float(len(t)) for t in texts] or [1.0], dtype=np.float32)
        mean = (weights[:, None] * whole).sum(axis=0) if len(whole) else out.mean(axis=0)
        return out, unit(mean), [t.vectors for t in tokens]

    def _soft_recall(self, group: list[str], answer_tokens: np.ndarray, demote: set[str]) -> float:
        """BERTScore-style recall: the IDF-weighted mean, over the point's content words,
        of each word's best cosine to any token of the answer (contextual vectors).

        Word overlap misses "restore a checkpoint saved before the jump" for "roll back
        to a checkpoint from before the spike"; contextual token vectors match
        "restore" with "roll back" and "jump" with "spike" (Zhang et al., 2020).
        """
        if not len(answer_tokens):
            return 0.0
        best = 0.0
        for phrase, encoded in zip(group, self.embedder.encode_tokens(group), strict=True):
            weights = self._token_weights(phrase, encoded.offsets, demote)
            if weights.sum() <= 0:
                continue
            sims = (encoded.vectors @ answer_tokens.T).max(axis=1)
            best = max(best, float((weights * sims).sum() / weights.sum()))
        return best

    def _token_weights(self, phrase: str, offsets: np.ndarray, demote: set[str]) -> np.ndarray:
        """Each token's share of its word's IDF weight; stopwords and the question's own
        words (question demoting, as in `IDF.recall`) weigh nothing. Kept per phrase and
        question: the same few rubric phrases are weighed on every grade."""
        key = (phrase, frozenset(demote))
        weights = self._weights.get(key)
        if weights is None:
            if len(self._weights) > 50_000:  # user questions come and go; the bank's stay small
                self._weights.clear()
            weights = self._weights[key] = self._weigh_tokens(phrase, offsets, demote)
        return weights

    def _weigh_tokens(self, phrase: str, offsets: np.ndarray, demote: set[str]) -> np.ndarray:
        found = word_stems(phrase)
        content = {start: term for start, _end, term in found if term is not None}
        if demote and set(content.values()) - demote:
            content = {k: v for k, v in content.items() if v not in demote}
        owner = np.full(len(offsets), -1)
        for t, (a, _b) in enumerate(offsets):
            owner[t] = next((start for start, end, _term in found if start <= a < end), -1)
        weights = np.zeros(len(offsets), dtype=np.float32)
        for start, term in content.items():
            sel = owner == start
            if sel.any():
                weights[sel] = self.idf.weight(term) / sel.sum()
        return weights

    # -- the grade --------------------------------------------------------

    def analyze(self, question: Question, answer: str) -> Analysis:
        """Everything the decision needs, before any threshold is applied, every claim the
        polarity reader reads included (what `evals/calibrate.py` fits on)."""
        analysis, chosen = self._analyze(question, answer)
        return self._read_polarity(analysis, chosen) if self.polarity is not None else analysis

    def _analyze(self, question: Question, answer: str) -> tuple[Analysis, list[ToRead]]:
        """The analysis with no polarity read yet, and the claims the reader would read
        (`choose_reads`)."""
        screened = screen_answer(question, answer)
        flags, numeric, text, cleaned = screened.flags, screened.numeric, screened.text, screened.cleaned
        if set(flags) & EMPTY_FLAGS:
            return Analysis(flags=flags, numeric=numeric), []
        rubric = question.rubric
        spans = segment(text)
        span_vecs, answer_vec, sentence_tokens = self._embed_spans(spans)
        answer_stems = set(content_stems(cleaned))
        question_stems = set(content_stems(clean(question.question)))
        kp_groups = [[kp.text, *kp.alternatives] for kp in rubric.key_points]
        mc_groups = [[m.text, *m.alternatives] for m in rubric.misconceptions]
        static_vecs = self.words.encode([clean(s.text) or s.text for s in spans])
        kp_sims, kp_static = self._similarity(kp_groups, spans, span_vecs, static_vecs)
        mc_sims, _ = self._similarity(mc_groups, spans, span_vecs)
        assert kp_static is not None
        refuting = refuting_spans(spans, set())  # spans that reject some claim
        rejected = self._rejections(
            spans, kp_groups, mc_groups, span_vecs, refuting, [m.twin for m in rubric.misconceptions]
        )
        kp_rejected, mc_rejected = rejected.points, rejected.misconceptions
        sentence_spans = [s for s in spans if s.level == "sentence"]
        sentence_text = [
            sentence_spans[n].text if n is not None else spans[j].text
            for j, n in enumerate(sentence_of(spans, sentence_spans))
        ]
        # a span about another format or stage is no evidence for a point about this one ("E5M2
        # has four exponent bits" says nothing of E4M3's layout)
        elsewhere = np.array(
            [[not names_agree(g, s.text, sentence_text[j]) for j, s in enumerate(spans)] for g in kp_groups],
            dtype=bool,
        ).reshape(len(kp_groups), len(spans))
        if kp_rejected.any():  # a sentence that rejects a point is no evidence for it
            kp_sims = np.where(kp_rejected, -1.0, kp_sims).astype(np.float32)
            kp_static = np.where(kp_rejected, -1.0, kp_static).astype(np.float32)
        kp_said = kp_sims  # what each span is about, for the misconceptions' margins
        if elsewhere.any():
            kp_sims = np.where(elsewhere, -1.0, kp_sims).astype(np.float32)
            kp_static = np.where(elsewhere, -1.0, kp_static).astype(np.float32)
        ref_vec, question_vec = self.embedder.encode([question.reference, question.question])
        distinct = distinctiveness(kp_sims, span_vecs @ question_vec)
        sentences = [j for j, s in enumerate(spans) if s.level == "sentence"]
        all_tokens = np.concatenate(sentence_tokens) if sentence_tokens else np.zeros((0, 1), np.float32)
        kp_twins = self._twin_similarity([kp.twin for kp in rubric.key_points], spans, span_vecs)
        mc_twins = self._twin_similarity([m.twin for m in rubric.misconceptions], spans, span_vecs)
        to_read: list[ToRead] = []  # the claims the polarity reader reads
        key_points = []
        for k, (row, group) in enumerate(zip(kp_sims, kp_groups, strict=True)):
            i = int(row.argmax())
            # a span closer to a wrong claim than to this point does not cover it, nor one
            # closer to another of its points ("a spike can come from a bad batch" is
            # evidence for "a bad batch of data", not for "skip the data and clip"). The
            # points of a free reference are its sentences, which may say one thing twice.
            rivals = list(mc_sims[:, i]) + ([] if rubric.derived else list(np.delete(kp_sims[:, i], k)))
            margin = min(0.0, float(row[i]) - max(rivals, default=float(row[i])))
            stems, tokens = answer_stems, all_tokens
            if kp_rejected[k].any():  # the words of a sentence that rejects the point do not say it
                kept = [n for n, j in enumerate(sentences) if not kp_rejected[k, j]]
                stems = set().union(*(content_stems(clean(spans[sentences[n]].text)) for n in kept))
                tokens = np.concatenate([sentence_tokens[n] for n in kept]) if kept else all_tokens[:0]
            lex = self._overlap(group, stems, question_stems)
            soft = self._soft_recall(group, tokens, question_stems)
            if row[i] >= POLARITY_GATE:
                to_read.append(
                    ("point", k, group[0], rubric.key_points[k].twin, sentence_text[i], float(row[i]))
                )
            key_points.append(
                PointFeatures(
                    similarity=float(row[i]),
                    overlap=lex,
                    margin=margin,
                    soft_recall=soft,
                    distinctiveness=float(distinct[k]),
                    static_similarity=float(kp_static[k].max()),
                    twin_margin=float(row[i] - kp_twins[k, i]) if np.isfinite(kp_twins[k, i]) else 0.0,
                    span=i,
                )
            )
        misconceptions = []
        span_stems = [set(content_stems(clean(s.text))) for s in spans]
        point_stems = [set().union(*(content_stems(clean(p)) for p in g)) for g in kp_groups]
        asked = asking_spans(spans)
        for m, (row, group) in enumerate(zip(mc_sims, mc_groups, strict=True)):
            # a claim rejected where it is said ("a common myth is that ...") is not stated there,
            # nor is one only asked about ("is it true that ...?")
            stated_in = [j for j in range(len(spans)) if not mc_rejected[m, j] and not asked[j]]
            if not stated_in:
                misconceptions.append(MisconceptionFeatures())
                continue
            i = stated_in[int(row[stated_in].argmax())]
            sim = float(row[i])
            said = spans[i].text
            sentence = sentence_text[i] if spans[i].level != "sentence" else ""
            if not (numbers_agree(group, said) and identifiers_agree(group, said, sentence)):
                sim = 0.0  # "7 GB" is not stated by a span that says "14 GB", nor bf16's by fp16's
            # margin: how much closer the span is to the wrong claim than to any right one
            margin = sim - float(kp_said[:, i].max()) if len(kp_said) else sim
            # overlap within the matched span only: a claim is stated in one place,
            # and a span that negates the claim ("it needs no loss scaling") shares
            # its words without stating it
            lex = self._overlap(group, span_stems[i], question_stems)
            if is_negated(spans[i].text) != is_negated(group[0]):
                lex = 0.0
            own, gap = self._own_words(
                group,
                point_stems,
                question_stems,
                [spans[j] for j in stated_in],
                [span_stems[j] for j in stated_in],
            )
            twin_margin = sim - float(mc_twins[m, i]) if sim > 0 and np.isfinite(mc_twins[m, i]) else 0.0
            if sim >= POLARITY_GATE:
                to_read.append(
                    ("misconception", m, group[0], rubric.misconceptions[m].twin, sentence_text[i], sim)
                )
            misconceptions.append(
                MisconceptionFeatures(
                    similarity=sim, overlap=lex, margin=margin, own_words=own, own_gap=gap,
                    twin_margin=twin_margin, span=i,
                )
            )  # fmt: skip
        # which way round the answer says a claim whose twin swaps its terms, in sentences
        # that neither reject a claim nor ask about one
        plain = [
            s.text for j, s in enumerate(spans) if s.level == "sentence" and not refuting[j] and not asked[j]
        ]
        # (or, for a claim whose twin turns the sign of a relation, which way two quantities move:
        # "a bigger batch, a smaller learning rate")
        point_order = [
            read_order(kp.text, kp.twin, plain) or read_covariation(kp.text, kp.twin, plain)
            for kp in rubric.key_points
        ]
        misconception_order = [
            read_order(m.text, m.twin, plain) or read_covariation(m.text, m.twin, plain)
            for m in rubric.misconceptions
        ]
        # a point said with one of its terms swapped for an opposed one ("weight decay" for
        # "gradient clipping"), read on the bank's rubrics, whose opposed terms it knows
        # (or with its roles swapped between its two clauses: "val loss keeps falling while train
        # loss turns up"; or with another point's words said of its stage or format: "stage 3
        # finally shards the optimizer states"; or of another format: "an FP64 instability"; or with
        # its numbers given to each other's words: "three exponent bits and four mantissa bits")
        point_swaps = (
            []
            if rubric.derived
            else [
                swap or turned or named or renamed or renumbered
                for swap, turned, named, renamed, renumbered in zip(
                    read_points(kp_groups, plain, text, [kp.twin or "" for kp in rubric.key_points]),
                    read_roles(kp_groups, plain),
                    read_named_roles(kp_groups, plain),
                    read_other_names(kp_groups, plain, text, question.question),
                    read_number_roles(kp_groups, plain),
                    strict=True,
                )
            ]
        )
        if self.support is not None:
            key_points, misconceptions = self._read_support(question, text, key_points, misconceptions)
        analysis = Analysis(
            flags=flags,
            numeric=numeric,
            spans=[s.text for s in spans],
            key_points=key_points,
            misconceptions=misconceptions,
            holistic=float(ref_vec @ answer_vec),
            elsewhere=self._elsewhere(question, answer_vec),
            asked=float(question_vec @ answer_vec),
            restates_question=answer_stems <= question_stems,
            sentences=sentence_text,
            point_order=point_order,
            misconception_order=misconception_order,
            point_swaps=point_swaps,
            point_rejections=[None if j is None else sentence_text[j] for j in rejected.point_at],
            misconception_rejections=[None if j is None else sentence_text[j] for j in rejected.twin_at],
            misconception_rivals=[
                rival_point([*group, m.twin or ""], point_stems)
                for m, group in zip(rubric.misconceptions, mc_groups, strict=True)
            ],
        )
        return analysis, choose_reads(to_read)

    def _read_support(
        self,
        question: Question,
        text: str,
        key_points: list[PointFeatures],
        misconceptions: list[MisconceptionFeatures],
    ) -> tuple[list[PointFeatures], list[MisconceptionFeatures]]:
        """Every key point's and misconception's support (`models.support`), in one pass."""
        assert self.support is not None
        rubric = question.rubric
        claims = [kp.text for kp in rubric.key_points] + [m.text for m in rubric.misconceptions]
        reads = self.support.support(question.ask or question.question, text, claims)
        n = len(key_points)
        return (
            [replace(f, support=s) for f, s in zip(key_points, reads[:n], strict=True)],
            [replace(f, support=s) for f, s in zip(misconceptions, reads[n:], strict=True)],
        )

    def decide(self, question: Question, a: Analysis, t0: float | None = None) -> Grade:
        """The grade of an analysis under this grader's calibration (`decision.decide`)."""
        return decide(question, a, self.calibration, t0)

    @staticmethod
    def rubric_texts(question: Question) -> list[str]:
        """Every text of a question the grader embeds: reference, question, points, misconceptions."""
        texts = [question.reference, question.question]
        for kp in question.key_points:
            texts += [kp.text, *kp.alternatives, *([kp.twin] if kp.twin else [])]
        for m in question.rubric.misconceptions:
            texts += [m.text, *m.alternatives, *([m.twin] if m.twin else [])]
        return texts

    @staticmethod
    def point_texts(question: Question) -> list[str]:
        """The key points' phrasings, whose token vectors the soft word match uses."""
        return [p for kp in question.key_points for p in (kp.text, *kp.alternatives)]

    def prime(self, questions: list[Question]) -> None:
        """Embed these questions' rubric phrasings and references now (and their phrasings'
        WordLlama vectors), so their first grade need not.

        The session calls it in the background while the candidate reads the question;
        the first call loads the vectors `interviewer index` saved, if any.
        """
        if not self._saved_loaded:
            self._load_saved()
        # all at once: texts of one token count share an (unpadded) forward pass
        self.embedder.encode([t for q in questions for t in self.rubric_texts(q)])
        points = [t for q in questions for t in self.point_texts(q)]
        self.embedder.encode_tokens(points)
        for q in questions:
            self._static_phrasings(self.point_texts(q))
        _ = self.idf

    def vector_cache_path(self) -> Path:
        slug = "".join(ch if ch.isalnum() else "-" for ch in self.settings.embedding_model.lower())
        return self.settings.home / "cache" / f"rubric-vectors-{slug}-{self.embedder.dtype}.npz"

    def prime_bank(self, chunk: int = 16, stop: threading.Event | None = None) -> tuple[int, int]:
        """Embed every rubric in the bank, kept in the data directory between runs.

        `interviewer index` and the app's warm-up call it. Without it, 16 sessions
        starting together spend most of their first turns embedding rubrics
        (py-spy under `interviewer bench`'s load). Works `chunk` questions at a
        time so grades can use the model in between (`chunk=0`: all at once, the fastest,
        for `interviewer index`). `stop`, once set, ends it between chunks with nothing saved (the
        app closing). Returns (loaded, computed).
        """
        bank, texts, points, loaded = self._load_saved()
        missing = len({t for t in texts if not self.embedder.cached(t)})
        missing += len({t for t in points if not self.embedder.tokens_cached(t)})  # their token vectors
        step = chunk or len(bank) or 1
        for i in range(0, len(bank), step):
            if stop is not None and stop.is_set():
                return loaded, 0
            self.prime(bank[i : i + step])
        if missing or not self.vector_cache_path().is_file():  # this process may hold them already
            self.embedder.save_cache(self.vector_cache_path(), texts, points)
        return loaded, missing

    def _load_saved(self) -> tuple[list[Question], list[str], list[str], int]:
        """The bank, its rubric texts, its key points' phrasings, and how many of the
        texts' saved vectors were loaded."""
        self._saved_loaded = True
        bank = list(load_bank(self.settings))
        texts = [t for q in bank for t in self.rubric_texts(q)]
        points = [t for q in bank for t in self.point_texts(q)]
        return bank, texts, points, self.embedder.load_cache(self.vector_cache_path(), texts, points)

    def grade(self, question: Question, answer: str) -> Grade:
        if (answer or "").strip():  # an empty answer is graded without the models
            self.load()
        t0 = time.perf_counter()
        analysis, chosen = self._analyze(question, answer)
        # with a second reader on (seconds a grade) every claim is read, as its thresholds were fitted
        if (
            self.polarity is not None
            and chosen
            and (self.second or self._reads_matter(question, analysis, chosen))
        ):
            analysis = self._read_polarity(analysis, chosen)
        grade = self.decide(question, analysis, t0)
        if self.second is None or not analysis.sentences:
            return grade
        reads = self.second.read(question, analysis, grade)
        analysis = replace(analysis, point_reads=reads.key_points, misconception_reads=reads.misconceptions)
        grade = self.decide(question, analysis, t0)
        reader = f"second reader: {self.second.backend.name} {self.second.backend.model}"
        return grade.model_copy(update={"grader": grade.grader.model_copy(update={"model": reader})})
