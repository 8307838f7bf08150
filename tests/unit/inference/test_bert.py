"""The numpy BERT forward pass equals a plain float64 transcription of BERT, padding and
the large-score path included, and its GELU is the exact (erf) one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fortemi.inference._bert import BertConfig, BertEncoder, gelu

CONFIG = BertConfig(
    hidden_size=8,
    num_layers=2,
    num_heads=2,
    intermediate_size=16,
    max_positions=12,
    layer_norm_eps=1e-12,
)


def _tensors(scale: float, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, i = CONFIG.hidden_size, CONFIG.intermediate_size

    def w(*shape: int, s: float = scale) -> np.ndarray:
        return (rng.standard_normal(shape) * s).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": w(30, h, s=1.0),
        "embeddings.position_embeddings.weight": w(CONFIG.max_positions, h, s=1.0),
        "embeddings.token_type_embeddings.weight": w(2, h, s=1.0),
        "embeddings.LayerNorm.weight": 1 + w(h, s=0.1),
        "embeddings.LayerNorm.bias": w(h, s=0.1),
    }
    for n in range(CONFIG.num_layers):
        p = f"encoder.layer.{n}."
        for name, (rows, cols) in {
            "attention.self.query": (h, h),
            "attention.self.key": (h, h),
            "attention.self.value": (h, h),
            "attention.output.dense": (h, h),
            "intermediate.dense": (i, h),
            "output.dense": (h, i),
        }.items():
            tensors[f"{p}{name}.weight"] = w(rows, cols)
            tensors[f"{p}{name}.bias"] = w(rows, s=0.1)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{p}{norm}.weight"] = 1 + w(h, s=0.1)
            tensors[f"{p}{norm}.bias"] = w(h, s=0.1)
    return tensors


def _reference(tensors: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT as the paper writes it, in float64, for one unpadded sequence."""
    t = {name: value.astype(np.float64) for name, value in tensors.items()}
    erf = np.vectorize(math.erf)

    def norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        scaled: np.ndarray = (x - mean) / np.sqrt(var + CONFIG.layer_norm_eps)
        return scaled * t[f"{prefix}.weight"] + t[f"{prefix}.bias"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ t[f"{name}.weight"].T + t[f"{name}.bias"]

    n, heads = len(ids), CONFIG.num_heads
    size = CONFIG.hidden_size // heads
    x = t["embeddings.word_embeddings.weight"][ids]
    x = x + t["embeddings.position_embeddings.weight"][:n]
    x = norm(x + t["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for layer in range(CONFIG.num_layers):
        p = f"encoder.layer.{layer}."
        q, k, v = (
            dense(x, p + f"attention.self.{part}").reshape(n, heads, size).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
        x = norm(x + dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        inner = dense(x, p + "intermediate.dense")
        inner = 0.5 * inner * (1 + erf(inner / math.sqrt(2)))
        x = norm(x + dense(inner, p + "output.dense"), p + "output.LayerNorm")
    pooled: np.ndarray = x.mean(0)
    unit: np.ndarray = pooled / np.linalg.norm(pooled)
    return unit


@pytest.mark.parametrize("scale", [0.3, 6.0], ids=["ordinary scores", "scores past exp range"])
def test_a_packed_batch_equals_bert_on_each_sequence_alone(scale: float) -> None:
    tensors = _tensors(scale)
    encoder = BertEncoder(CONFIG, tensors)
    sequences = [[1, 5, 9, 2], [1, 2], [1, 7, 7, 7, 3, 4, 2], [1, 29, 2]]
    ids = np.array([token for sequence in sequences for token in sequence], dtype=np.int64)
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    vectors = encoder.pooled(ids, lengths)
    assert vectors.dtype == np.float32
    for row, sequence in enumerate(sequences):
        np.testing.assert_allclose(vectors[row], _reference(tensors, sequence), atol=2e-5)


def test_checkpoints_with_a_bert_prefix_load_the_same() -> None:
    tensors = _tensors(0.3)
    prefixed = {f"bert.{name}": value for name, value in tensors.items()}
    ids, lengths = np.array([1, 4, 2]), np.array([3])
    np.testing.assert_array_equal(
        BertEncoder(CONFIG, prefixed).pooled(ids, lengths),
        BertEncoder(CONFIG, tensors).pooled(ids, lengths),
    )


def test_gelu_is_the_erf_form_to_float32_precision() -> None:
    x = np.linspace(-12, 12, 48_001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    # float32 spacing near 12 is 9.5e-7: the error is rounding, not the approximation.
    assert np.abs(gelu(x.copy()) - exact).max() < 2e-6


def test_too_long_an_input_is_refused() -> None:
    encoder = BertEncoder(CONFIG, _tensors(0.3))
    too_long = CONFIG.max_positions + 1
    with pytest.raises(ValueError, match="exceed"):
        encoder.pooled(np.ones(too_long, dtype=np.int64), np.array([too_long]))


@pytest.mark.parametrize(
    ("ids", "lengths"), [([1, 2, 3], [2]), ([1, 2], [2, 0]), ([], [])], ids=["sum", "empty", "none"]
)
def test_lengths_must_cover_the_ids_with_no_empty_sequence(
    ids: list[int], lengths: list[int]
) -> None:
    encoder = BertEncoder(CONFIG, _tensors(0.3))
    with pytest.raises(ValueError, match=r"token|lengths"):
        encoder.pooled(np.array(ids, dtype=np.int64), np.array(lengths, dtype=np.int64))
