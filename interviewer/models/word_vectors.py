"""Static sentence vectors (WordLlama): a second, independent view of similarity.

WordLlama (`pip install wordllama`, MIT) averages token vectors taken from a
large language model's embedding table and trained on paraphrase and NLI pairs.
It reads rewordings differently from the contextual MiniLM encoder in
`embeddings.py`, so the embedded grader uses its similarity as one more
feature of a key point's credit (`grading/rubric.py`). It needs no torch and
costs about 0.1 ms a sentence.

Its weights (`l2_supercat`, 256 dimensions, 16 MB) ship inside the PyPI wheel,
so nothing is downloaded: the loader is pointed at the package's own folder
with downloads disabled (wordllama 0.4 looks for its bundled tokenizer under
the wrong folder name and would otherwise fetch it from the Hugging Face Hub).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from interviewer.errors import BackendUnavailable

CONFIG = "l2_supercat"
DIM = 256


class WordVectors:
    """Unit-length WordLlama sentence vectors, loaded on first use; thread-safe.

    A text's vector is the normalised mean of its tokens' rows in WordLlama's
    table, as `WordLlama.embed(norm=True)` computes it, but one text at a time
    without padding (3-4x faster for an answer's spans) and with rubric phrasings
    kept once computed (`cache=True`).
    """

    def __init__(self, config: str = CONFIG, dim: int = DIM, cache_size: int = 20_000) -> None:
        self.config = config
        self.dim = dim
        self._model: Any = None
        self._tokenizer: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model, self._tokenizer = self._load()
            return self._model

    def _load(self) -> tuple[Any, Any]:
        try:
            import wordllama
            from tokenizers import Tokenizer
            from wordllama import WordLlama
        except ImportError as exc:
            raise BackendUnavailable(
                "The embedded grader needs the wordllama package (its weights ship in "
                "the wheel): `pip install wordllama`, or re-run scripts/setup.sh."
            ) from exc
        try:
            model = WordLlama.load(
                config=self.config,
                dim=self.dim,
                cache_dir=Path(wordllama.__file__).parent,
                disable_download=True,
            )
        except FileNotFoundError as exc:
            raise BackendUnavailable(
                f"wordllama's bundled {self.config!r} weights were not found ({exc}). "
                "Reinstall it: `pip install --force-reinstall wordllama`."
            ) from exc
        tokenizer = Tokenizer.from_str(model.tokenizer.to_str())  # a copy without batch padding
        tokenizer.no_padding()
        return model, tokenizer

    def encode(self, texts: list[str], *, cache: bool = False) -> np.ndarray:
        """(len(texts), dim) float32, unit rows; a text without tokens gets a zero row."""
        table = self.model.embedding
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for n, text in enumerate(texts):
                vec = self._cache.get(text) if cache else None
                if vec is None:
                    ids = np.clip(
                        self._tokenizer.encode(text, add_special_tokens=False).ids, 0, len(table) - 1
                    )
                    vec = table[ids].mean(axis=0) if len(ids) else np.zeros(self.dim, dtype=np.float32)
                    norm = float(np.linalg.norm(vec))
                    vec = (vec / norm if norm > 0 else vec).astype(np.float32)
                    if cache:
                        self._cache[text] = vec
                        while len(self._cache) > self._cache_size:
                            self._cache.popitem(last=False)
                out[n] = vec
        return out


@lru_cache(maxsize=2)
def word_vectors(config: str = CONFIG, dim: int = DIM) -> WordVectors:
    """The process's shared WordLlama model."""
    return WordVectors(config, dim)
