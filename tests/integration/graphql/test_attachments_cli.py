"""`fortemi attach` and `fortemi import` run as a user runs them, against the live server."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.integration.graphql.conftest import GraphQLCall

FORTEMI = str(Path(sys.executable).parent / "fortemi")


async def _run(live_server: str, token: str, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.update(FORTEMI_URL=f"http://{live_server}", FORTEMI_TOKEN=token)
    process = await asyncio.create_subprocess_exec(
        FORTEMI, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_import_makes_a_note_of_each_file_under_a_folder_with_progress(
    live_server: str, user_token: str, memory: str, tmp_path: Path, gql: GraphQLCall
) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("# Alpha\n")
    (tmp_path / "docs" / "sub" / "b.csv").write_text("x,y\n1,2\n")
    (tmp_path / "docs" / ".hidden").write_text("not sent")
    code, out, err = await _run(
        live_server, user_token, "import", str(tmp_path / "docs"), "--memory", memory
    )
    assert code == 0, out + err
    assert "sent 2/2 files" in err
    assert len(out.strip().splitlines()) == 2
    titles = await gql("{ notes(first: 10) { edges { node { title attachments { filename } } } } }")
    found = sorted(e["node"]["title"] for e in titles["data"]["notes"]["edges"])
    assert found == ["a.md", "b.csv"]


async def test_attach_reports_a_refused_file_and_still_sends_the_others(
    live_server: str, user_token: str, memory: str, tmp_path: Path, gql: GraphQLCall
) -> None:
    body = await gql('mutation { createNote(input: {title: "Inbox"}) { id } }')
    note_id = body["data"]["createNote"]["id"]
    (tmp_path / "ok.txt").write_text("fine")
    code, _, err = await _run(
        live_server, user_token, "attach", note_id, str(tmp_path / "ok.txt"),
        str(tmp_path / "missing.txt"), "--memory", memory,
    )  # fmt: skip
    assert code == 1
    assert "missing.txt: " in err
    listed = await gql(
        "query($id: ID!) { note(id: $id) { attachments { filename } } }", {"id": note_id}
    )
    assert listed["data"]["note"]["attachments"] == [{"filename": "ok.txt"}]
