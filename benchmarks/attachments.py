"""Peak memory of an attachment upload, beside the file's size: bounded, not proportional.

``python -m benchmarks.attachments [--home DIR] [--sizes 1,10,50]``

The real app (a :class:`~fortemi.runtime.Runtime` over PostgreSQL and Redis: ``DATABASE_URL``
/ ``REDIS_URL``, else embedded ones in ``--home``, the data folder, a temporary one by
default) receives each file by ``attachFile`` in a GraphQL multipart request, in process
through httpx's ASGI transport, the file streamed from disk. Python's allocations are
traced (``tracemalloc``) from before the request to after the response: the peak is what
the upload held at once (client side included: both run in this process). The baseline,
in the same run: the peak of reading the same file whole (``Path.read_bytes``), which is
what an upload path that buffered the file would hold at least.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import tracemalloc
from pathlib import Path

import httpx

from benchmarks._common import backing_services, bench_home, common_setup, print_setup, table
from fortemi.app import create_app
from fortemi.platform.notes import NoteDraft
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime

MIB = 1024 * 1024
OPEN = {
    "version": 1,
    "access_level": "public",
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}},
}
ATTACH = "mutation($n: ID!, $file: Upload!) { attachFile(noteId: $n, file: $file) { size digest } }"


def _make_file(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        left = size
        while left:
            piece = os.urandom(min(MIB, left))
            handle.write(piece)
            left -= len(piece)


def _peak_of_reading(path: Path) -> int:
    tracemalloc.start()
    data = path.read_bytes()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del data
    return peak


async def _peak_of_upload(
    client: httpx.AsyncClient, path: Path, note_id: str, headers: dict[str, str]
) -> tuple[int, float, dict[str, object]]:
    operations = json.dumps({"query": ATTACH, "variables": {"n": note_id, "file": None}})
    form = {"operations": operations, "map": json.dumps({"0": ["variables.file"]})}
    tracemalloc.start()
    started = time.perf_counter()
    with path.open("rb") as handle:
        response = await client.post(
            "/graphql", data=form, files={"0": (path.name, handle)}, headers=headers
        )
    took = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    body = response.json()
    assert "errors" not in body, body
    return peak, took, body["data"]["attachFile"]


async def _run(home: Path, sizes: list[int]) -> None:
    with backing_services(home) as (urls, embedded):
        settings = Settings(home=home, OIDC_ISSUER=None)  # type: ignore[call-arg]
        runtime = await Runtime.open(settings, urls)
        try:
            print_setup(
                "attachments: peak memory of an upload", await common_setup(urls, embedded, home)
            )
            memory = f"bench_attach_{os.getpid()}"
            await runtime.memories.create(memory, created_by="bench")
            await runtime.policies.put(
                "memory", memory, memory, {**OPEN, "memory": memory}, actor="bench"
            )
            note = await runtime.notes.create(
                memory, NoteDraft(title="uploads", content="bench"), actor="bench"
            )
            assert runtime.issuer is not None
            token = runtime.issuer.mint("bench", roles=["admin"])
            headers = {"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory}
            transport = httpx.ASGITransport(app=create_app(runtime))
            rows = []
            async with httpx.AsyncClient(
                transport=transport, base_url="http://bench", timeout=600
            ) as client:
                for size_mib in sizes:
                    path = home / f"upload-{size_mib}.bin"
                    _make_file(path, size_mib * MIB)
                    baseline = _peak_of_reading(path)
                    peak, took, answer = await _peak_of_upload(client, path, str(note.id), headers)
                    assert answer["size"] == size_mib * MIB
                    rows.append([
                        f"{size_mib} MiB", f"{peak / MIB:.2f} MiB", f"{baseline / MIB:.2f} MiB",
                        f"{peak / (size_mib * MIB):.1%}", f"{size_mib / took:.0f} MiB/s",
                    ])  # fmt: skip
                    path.unlink()
            print(table(
                ["file", "upload peak (traced)", "read whole (baseline)", "peak / size", "rate"],
                rows, "rrrrr",
            ))  # fmt: skip
            await runtime.memories.delete(memory, confirm=memory)
        finally:
            await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", help="the data folder (default: a temporary one)")
    parser.add_argument("--sizes", default="1,10,50", help="file sizes in MiB, comma separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with bench_home(args.home) as home:
        asyncio.run(_run(home, sizes))


if __name__ == "__main__":
    main()
