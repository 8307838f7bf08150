"""`fortemi vault sync` run as a user runs it: the installed command, a GraphQL client of
the live test server, with its token in the environment."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

from tests.integration.graphql.conftest import GraphQLCall
from tests.integration.graphql.vaults.conftest import HOMELAB

FORTEMI = str(Path(sys.executable).parent / "fortemi")


def _env(live_server: str, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.update(FORTEMI_URL=f"http://{live_server}", FORTEMI_TOKEN=token)
    return env


async def _run(live_server: str, token: str, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        FORTEMI,
        "vault",
        "sync",
        *args,
        env=_env(live_server, token),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _copy(tmp_path: Path) -> Path:
    vault = tmp_path / "homelab"
    shutil.copytree(HOMELAB, vault)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.md").write_text("editor state, not a note\n")
    return vault


async def test_sync_prints_a_summary_and_a_second_run_changes_nothing(
    live_server: str, syncer: str, homelab_memory: str, tmp_path: Path, gql: GraphQLCall
) -> None:
    vault = _copy(tmp_path)

    code, out, err = await _run(
        live_server, syncer, str(vault), "--memory", homelab_memory, "--batch-files", "4"
    )

    assert code == 0, out + err
    assert "notes: 11 created, 0 updated, 0 restored, 0 unchanged, 0 deleted, 0 skipped" in out
    assert "policies: 6 applied, 0 unchanged, 1 skipped" in out
    # The fixture's README: 11 links outside code, and every one resolves.
    assert "links: 11 resolved, 0 dangling (0 ambiguous)" in out
    assert "warning: policies/default.yaml: default_policy_not_applied" in out
    assert "problems: 0 error(s)" in out
    assert "synced 18/18 files" in err  # not a terminal: one plain line per batch
    body = await gql(
        '{ notes(filter: {source: "vault:homelab"}) { totalCount } }',
        token=syncer,
        memory=homelab_memory,
    )
    assert body["data"]["notes"]["totalCount"] == 11

    code, out, _ = await _run(live_server, syncer, str(vault), "--memory", homelab_memory)

    assert code == 0
    assert "notes: 0 created, 0 updated, 0 restored, 11 unchanged, 0 deleted, 0 skipped" in out
    assert "policies: 0 applied, 6 unchanged" in out


async def test_a_removed_file_is_deleted_and_a_bad_file_is_reported_with_exit_code_1(
    live_server: str, syncer: str, homelab_memory: str, tmp_path: Path
) -> None:
    vault = _copy(tmp_path)
    code, _, _ = await _run(live_server, syncer, str(vault), "--memory", homelab_memory)
    assert code == 0
    (vault / "projects/poimen/memories/ownership.md").unlink()
    (vault / "shared/concepts/latin1.md").write_bytes(b"caf\xe9\n")
    (vault / "shared/concepts/huge.md").write_bytes(b"x" * 200_000)

    code, out, _ = await _run(
        live_server, syncer, str(vault), "--memory", homelab_memory, "--max-file-bytes", "100000"
    )

    assert code == 1
    assert "10 unchanged, 1 deleted" in out
    assert "error: shared/concepts/latin1.md:1: not_utf8: " in out
    assert "error: shared/concepts/huge.md: too_large: " in out
    assert "problems: 2 error(s)" in out
    # Its own link (L6) went with it; L2 and L5, which named it, fall to the vault-wide
    # suffix rule and find rust-guide's memories/ownership.md: 10 links, all resolved.
    assert "links: 10 resolved, 0 dangling (0 ambiguous)" in out


async def test_dry_run_reports_and_writes_nothing(
    live_server: str, syncer: str, homelab_memory: str, tmp_path: Path, gql: GraphQLCall
) -> None:
    code, out, _ = await _run(
        live_server, syncer, str(_copy(tmp_path)), "--memory", homelab_memory, "--dry-run"
    )

    assert code == 0
    assert "notes: 11 created" in out
    assert "links: not resolved in a dry run" in out
    body = await gql(
        '{ notes(filter: {source: "vault:homelab"}) { totalCount } }',
        token=syncer,
        memory=homelab_memory,
    )
    assert body["data"]["notes"]["totalCount"] == 0


async def test_a_bad_vault_name_or_token_is_one_line_and_a_nonzero_exit(
    live_server: str, syncer: str, homelab_memory: str, tmp_path: Path
) -> None:
    vault = _copy(tmp_path)

    code, _, err = await _run(live_server, syncer, str(vault), "--name", "bad name")
    assert code != 0
    assert err.strip().splitlines()[-1].startswith("fortemi vault: vault 'bad name' is not")

    code, _, err = await _run(live_server, "not-a-token", str(vault), "--memory", homelab_memory)
    assert code != 0
    assert "FORTEMI_TOKEN" in err.strip().splitlines()[-1]
    assert "Traceback" not in err


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def test_watch_syncs_a_changed_file_and_stops_cleanly_on_ctrl_c(
    live_server: str, syncer: str, homelab_memory: str, tmp_path: Path
) -> None:
    vault = _copy(tmp_path)
    process = await asyncio.create_subprocess_exec(
        FORTEMI,
        "vault",
        "sync",
        str(vault),
        "--memory",
        homelab_memory,
        "--watch",
        "--interval",
        "0.1",
        env=_env(live_server, syncer),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # Ctrl-C as a terminal delivers it, even when this session was started in the
        # background of a shell, which makes its children ignore SIGINT.
        preexec_fn=_sigint_default,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    while b"watching" not in await process.stderr.readline():
        pass
    # A shared concept: the memory's policy lets the syncer write it. (The vault's own
    # project policies, applied by the first sync, state no write action.)
    note = vault / "shared/concepts/design-patterns.md"
    note.write_text(note.read_text() + "\nA new paragraph about #inference.\n")
    (vault / "shared/concepts/new.md").write_text("# New\n")

    # One poll may see both changes or each alone: read until both were reported.
    seen = ""
    while not (" 1 updated," in seen and " 1 created," in seen):
        line = (await process.stdout.readline()).decode()
        assert line, "the watcher stopped before reporting the changes"
        assert not line.startswith("error:"), seen + line
        if line.startswith("notes:") and " 11 created," not in line:
            seen += line
    process.send_signal(signal.SIGINT)
    _, err = await process.communicate()

    assert process.returncode == 0, err.decode()
    assert " created," in seen
    assert " 0 unchanged," in seen  # only what changed is sent
    assert "stopped" in err.decode()
    assert "Traceback" not in err.decode()
