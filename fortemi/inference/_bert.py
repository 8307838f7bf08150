"""A BERT encoder's forward pass in numpy, for sentence embeddings on the CPU.

It reads the standard BERT checkpoint layout (``embeddings.*``, ``encoder.layer.N.*``, as
Hugging Face writes it to ``model.safetensors``) and computes what a sentence-transformers
``Transformer → Pooling(mean) → Normalize`` stack computes, in float32:

    x = LayerNorm(word[ids] + position[0..L) + token_type[0])
    per layer:  x = LayerNorm(x + Attention(x) W_o)
                x = LayerNorm(x + GELU(x W_1) W_2)
    vector = normalize(mean of x over the sequence's tokens)

The work is arranged for BLAS and the cache: a batch's sequences are packed end to end
with no padding (attention runs per sequence, over its own tokens), the three attention
projections are one fused matrix, the 1/sqrt(head size) scale (times log2 e, for exp2) is
folded into the query weights at load time, and everything after attention runs over row
tiles so its elementwise work stays in cache.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["BertConfig", "BertEncoder", "gelu"]

F32 = NDArray[np.float32]

# Rows of the feed-forward tile: 256 x 1536 float32 (1.5 MiB) keeps BLAS efficient, and
# GELU runs over it in blocks of 64 rows so its temporaries stay in a core's L2 cache.
_FFN_TILE_ROWS = 256
_GELU_BLOCK_ROWS = 64

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - t (a1 + a2 t + ... + a5 t^4) exp(-z^2) with
# t = 1 / (1 + p z), z >= 0, absolute error <= 1.5e-7 (below float32's resolution near 1).
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_LOG2_E = 1.0 / math.log(2.0)
# GELU(x) = max(x, 0) - |x| / 2 * (1 - erf(|x| / sqrt 2)); the 1/2 is folded in here.
_HALF_A = tuple(np.float32(a / 2) for a in _AS_A)
_P_SCALED = np.float32(_AS_P * math.sqrt(0.5))
# exp(-x^2 / 2) as exp2(x^2 * -log2(e) / 2): numpy's float32 exp2 is the faster of the two.
_EXP2_SCALE = np.float32(-0.5 * _LOG2_E)


def gelu(x: F32) -> F32:
    """The exact (erf) GELU BERT uses, in place on ``x``, which is returned.

    Exact to float32 rounding: erf comes from the A&S 7.1.26 rational approximation
    (|error| <= 1.5e-7), evaluated with in-place numpy operations, a block of rows at a
    time so the three temporaries stay in cache.
    """
    rows = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
    block = rows[:_GELU_BLOCK_ROWS]
    a, t, q = np.empty_like(block), np.empty_like(block), np.empty_like(block)
    for start in range(0, rows.shape[0], _GELU_BLOCK_ROWS):
        xb = rows[start : start + _GELU_BLOCK_ROWS]
        n = xb.shape[0]
        _gelu_block(xb, a[:n], t[:n], q[:n])
    return x


def _gelu_block(x: F32, a: F32, t: F32, q: F32) -> None:
    np.abs(x, out=a)
    # q = t * poly(t) / 2 with t = 1 / (1 + p |x| / sqrt 2)
    np.multiply(a, _P_SCALED, out=t)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    np.multiply(t, _HALF_A[4], out=q)
    for coefficient in (_HALF_A[3], _HALF_A[2], _HALF_A[1], _HALF_A[0]):
        q += coefficient
        q *= t
    # t = exp(-x^2 / 2)
    np.multiply(a, a, out=t)
    t *= _EXP2_SCALE
    np.exp2(t, out=t)
    q *= t
    q *= a
    np.maximum(x, np.float32(0.0), out=x)
    x -= q


def _layer_norm(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    """LayerNorm over the last axis of a 2-D ``x``, in place; ``x`` is returned."""
    width = np.float32(1.0 / x.shape[-1])
    mean = np.einsum("ij->i", x)[:, None]
    mean *= width
    x -= mean
    scale = np.einsum("ij,ij->i", x, x)[:, None]
    scale *= width
    scale += np.float32(eps)
    np.sqrt(scale, out=scale)
    np.reciprocal(scale, out=scale)
    x *= scale
    x *= gamma
    x += beta
    return x


@dataclass(frozen=True, slots=True)
class BertConfig:
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_positions: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: only the erf GELU activation is supported")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only absolute position embeddings are supported")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            max_positions=int(raw["max_position_embeddings"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
        )


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: F32  # (hidden, 3 * hidden), query columns pre-scaled by log2(e)/sqrt(head size)
    qkv_b: F32
    out_w: F32  # (hidden, hidden)
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    ffn_in_w: F32  # (hidden, intermediate)
    ffn_in_b: F32
    ffn_out_w: F32  # (intermediate, hidden)
    ffn_out_b: F32
    ln2_g: F32
    ln2_b: F32


class BertEncoder:
    """Immutable after construction, so one instance serves any number of threads."""

    def __init__(self, config: BertConfig, tensors: Mapping[str, NDArray[np.generic]]) -> None:
        if config.hidden_size % config.num_heads:
            raise ValueError("hidden size is not a multiple of the head count")
        self.config = config
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

        def get(name: str) -> F32:
            return np.ascontiguousarray(tensors[prefix + name], dtype=np.float32)

        def linear(name: str) -> tuple[F32, F32]:
            # Checkpoints store (out, in); x @ W wants (in, out), contiguous for BLAS.
            return np.ascontiguousarray(get(f"{name}.weight").T), get(f"{name}.bias")

        self._word = get("embeddings.word_embeddings.weight")
        self._position = get("embeddings.position_embeddings.weight")
        self._type0 = get("embeddings.token_type_embeddings.weight")[0]
        self._ln_g = get("embeddings.LayerNorm.weight")
        self._ln_b = get("embeddings.LayerNorm.bias")
        # Scores come out in log2 units (softmax then uses exp2, the faster exp in numpy).
        scale = np.float32(_LOG2_E / math.sqrt(config.hidden_size // config.num_heads))
        layers = []
        for i in range(config.num_layers):
            at = f"encoder.layer.{i}.attention"
            q_w, q_b = linear(f"{at}.self.query")
            k_w, k_b = linear(f"{at}.self.key")
            v_w, v_b = linear(f"{at}.self.value")
            out_w, out_b = linear(f"{at}.output.dense")
            ffn_in_w, ffn_in_b = linear(f"encoder.layer.{i}.intermediate.dense")
            ffn_out_w, ffn_out_b = linear(f"encoder.layer.{i}.output.dense")
            layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([q_w * scale, k_w, v_w], axis=1)),
                    qkv_b=np.concatenate([q_b * scale, k_b, v_b]),
                    out_w=out_w,
                    out_b=out_b,
                    ln1_g=get(f"{at}.output.LayerNorm.weight"),
                    ln1_b=get(f"{at}.output.LayerNorm.bias"),
                    ffn_in_w=ffn_in_w,
                    ffn_in_b=ffn_in_b,
                    ffn_out_w=ffn_out_w,
                    ffn_out_b=ffn_out_b,
                    ln2_g=get(f"encoder.layer.{i}.output.LayerNorm.weight"),
                    ln2_b=get(f"encoder.layer.{i}.output.LayerNorm.bias"),
                )
            )
        self._layers = tuple(layers)
        self._ones = np.ones(config.max_positions, dtype=np.float32)  # row sums as a gemv

    @classmethod
    def load(cls, folder: Path) -> BertEncoder:
        """The encoder in ``folder`` (``config.json`` + ``model.safetensors``)."""
        from safetensors.numpy import load_file

        config = BertConfig.from_file(folder / "config.json")
        return cls(config, load_file(folder / "model.safetensors"))

    def pooled(self, ids: NDArray[np.int64], lengths: NDArray[np.int64]) -> F32:
        """Mean-pooled, L2-normalised vectors of a batch of sequences.

        ``ids`` holds the sequences' token ids end to end (no padding), ``lengths`` how
        many belong to each. Position-wise work runs on all tokens at once; attention runs
        per sequence, on its own tokens only, so no work is spent on padding.
        """
        if len(lengths) == 0 or int(lengths.min()) < 1:
            raise ValueError("every sequence needs at least one token")
        if int(lengths.max()) > self.config.max_positions:
            raise ValueError(
                f"{int(lengths.max())} tokens exceed the model's {self.config.max_positions}"
            )
        if int(lengths.sum()) != len(ids):
            raise ValueError("lengths do not add up to the number of ids")
        offsets = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        positions = np.arange(len(ids), dtype=np.int64) - np.repeat(offsets, lengths)
        x = self._word[ids]
        x += self._position[positions]
        x += self._type0
        _layer_norm(x, self._ln_g, self._ln_b, self.config.layer_norm_eps)
        spans = [(int(o), int(o + n)) for o, n in zip(offsets, lengths, strict=True)]
        for layer in self._layers:
            x = self._layer(x, layer, spans)
        pooled: F32 = np.add.reduceat(x, offsets, axis=0)
        pooled /= lengths.astype(np.float32)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        pooled /= np.maximum(norms, np.float32(1e-12))
        return pooled

    def _layer(self, x: F32, layer: _Layer, spans: list[tuple[int, int]]) -> F32:
        heads = self.config.num_heads
        size = self.config.hidden_size // heads
        context = np.empty_like(x)
        for start, end in spans:  # one sequence at a time: its projections stay in cache
            n = end - start
            qkv = x[start:end] @ layer.qkv_w
            qkv += layer.qkv_b
            # (n, 3 * hidden) -> three (heads, n, size) views
            q, k, v = qkv.reshape(n, 3, heads, size).transpose(1, 2, 0, 3)
            scores = q @ k.transpose(0, 2, 1)  # (heads, n, n), log2 units
            # Softmax is shift-invariant; subtracting the row maximum only guards exp2()
            # against overflow. |q.k| <= max|q| max|k|: while that bound is under 80 no
            # score can overflow (2^128) or underflow a whole row, so the pass is skipped.
            bound = np.sqrt(np.einsum("hns,hns->hn", q, q).max())
            bound *= np.sqrt(np.einsum("hns,hns->hn", k, k).max())
            if bound >= 80.0:
                scores -= scores.max(axis=-1, keepdims=True)
            np.exp2(scores, out=scores)
            sums = (scores.reshape(-1, n) @ self._ones[:n]).reshape(heads, n, 1)  # BLAS gemv
            attended = scores @ v  # normalised here, on (n, size) rather than on (n, n)
            attended /= sums
            context[start:end] = attended.transpose(1, 0, 2).reshape(n, -1)
        out = np.empty_like(x)
        eps = self.config.layer_norm_eps
        for start in range(0, x.shape[0], _FFN_TILE_ROWS):  # a tile stays in cache throughout
            rows = slice(start, start + _FFN_TILE_ROWS)
            hidden: F32 = context[rows] @ layer.out_w
            hidden += layer.out_b
            hidden += x[rows]
            _layer_norm(hidden, layer.ln1_g, layer.ln1_b, eps)
            inner: F32 = hidden @ layer.ffn_in_w
            inner += layer.ffn_in_b
            gelu(inner)
            tile = out[rows]
            np.matmul(inner, layer.ffn_out_w, out=tile)
            tile += layer.ffn_out_b
            tile += hidden
            _layer_norm(tile, layer.ln2_g, layer.ln2_b, eps)
        return out
