"""The vault command's batching and watching, against a client that records its calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fortemi.wiki.vaults.client import SyncOptions, send, stamps, watch_folder
from fortemi.wiki.vaults.files import scan


class Recorder:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def sync(self, input: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(input)
        return {"created": len(input["files"])}


def _vault(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_batches_cover_the_whole_path_range_in_order_and_access_files_go_last(
    tmp_path: Path,
) -> None:
    root = _vault(
        tmp_path,
        {
            "a.md": "a",
            "b.md": "b",
            "projects/p/_access.yaml": "x",
            "projects/p/c.md": "c",
            "z.md": "z",
        },
    )
    options = SyncOptions.of(root, None, "v", batch_files=2)
    client = Recorder()

    summary = send(client, options, list(scan(root, max_bytes=100)), progress=lambda d, t: None)  # type: ignore[arg-type]

    assert [([f["path"] for f in c["files"]], c.get("covers")) for c in client.calls] == [
        (["a.md", "b.md"], {"after": None, "through": "b.md"}),
        (["projects/p/c.md", "z.md"], {"after": "b.md", "through": None}),
        (["projects/p/_access.yaml"], None),
    ]
    assert summary.counts["created"] == 5


def test_an_empty_vault_still_sends_one_batch_that_prunes_everything(tmp_path: Path) -> None:
    client = Recorder()

    send(client, SyncOptions.of(tmp_path, None, "v"), [], progress=lambda d, t: None)  # type: ignore[arg-type]

    assert client.calls == [
        {"vault": "v", "files": [], "dryRun": False, "covers": {"after": None, "through": None}}
    ]


def test_files_too_large_or_not_text_are_sent_so_that_their_notes_are_kept_or_reported(
    tmp_path: Path,
) -> None:
    root = _vault(tmp_path, {"big.md": "x" * 50})
    (root / "latin1.md").write_bytes(b"caf\xe9")
    client = Recorder()

    summary = send(
        client,  # type: ignore[arg-type]
        SyncOptions.of(root, None, "v", max_file_bytes=10),
        list(scan(root, max_bytes=10)),
        progress=lambda d, t: None,
    )

    assert client.calls[0]["files"] == [
        {"path": "big.md"},
        {"path": "latin1.md", "contentBase64": "Y2Fm6Q=="},
    ]
    assert [(p["path"], p["reason"]) for p in summary.problems] == [("big.md", "too_large")]
    assert summary.errors == 1


def test_watch_sends_changed_files_and_prunes_only_the_range_a_removed_file_left(
    tmp_path: Path,
) -> None:
    root = _vault(tmp_path, {"a.md": "# A\n", "b.md": "# B\n", "c.md": "# C\n"})
    options = SyncOptions.of(root, None, "v")
    client = Recorder()
    since = stamps(root)
    polls = 0

    def sleep(seconds: float) -> None:
        nonlocal polls
        polls += 1
        if polls == 1:
            (root / "a.md").write_text("# A, changed\n")
            (root / "b.md").unlink()
        elif polls == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        watch_folder(client, options, since=since, interval=0, report=lambda s: None, sleep=sleep)  # type: ignore[arg-type]

    assert client.calls == [
        {"vault": "v", "files": [{"path": "a.md", "content": "# A, changed\n"}], "dryRun": False},
        {
            "vault": "v",
            "files": [],
            "dryRun": False,
            "covers": {"after": "a.md", "through": "b.md"},
        },
    ]


def test_a_dendron_yml_at_the_root_makes_it_a_dendron_vault(tmp_path: Path) -> None:
    (tmp_path / "dendron.yml").write_text("version: 5\n")

    assert SyncOptions.of(tmp_path, None, None).flavour == "dendron"
    assert SyncOptions.of(tmp_path, None, None).vault == tmp_path.name
