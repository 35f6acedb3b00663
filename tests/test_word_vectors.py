"""The grader's second similarity view: WordLlama vectors, loaded from the wheel, never downloaded."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from interviewer.errors import BackendUnavailable
from interviewer.models.word_vectors import DIM, WordVectors


def test_the_bundled_weights_load_without_any_network_call(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import requests

    def no_network(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError(f"wordllama tried to download: {args}")

    monkeypatch.setattr(requests, "get", no_network)
    vecs = WordVectors().encode(["Roll back to a checkpoint from before the spike."])
    assert vecs.shape == (1, DIM)
    assert abs(float(np.linalg.norm(vecs[0])) - 1.0) < 1e-5


def test_a_rewording_is_closer_than_a_different_claim() -> None:
    point, reworded, other = WordVectors().encode([
        "Roll back to a checkpoint from before the spike",
        "restore a checkpoint saved before the jump and carry on from it",
        "lower the learning rate and clip the gradients harder",
    ])  # fmt: skip
    assert float(point @ reworded) > float(point @ other) + 0.1


def test_an_empty_text_gets_a_zero_vector_and_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vecs = WordVectors().encode(["", "clip gradients"])
    assert not vecs[0].any() and vecs[1].any()
    assert WordVectors().encode([]).shape == (0, DIM)


def test_a_missing_package_says_how_to_install_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    monkeypatch.setitem(sys.modules, "wordllama", None)  # import fails
    with pytest.raises(BackendUnavailable, match="pip install wordllama"):
        WordVectors().encode(["anything"])
