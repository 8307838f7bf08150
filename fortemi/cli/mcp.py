"""``fortemi mcp``: Fortemi as an MCP server on stdio, for agents that start it."""

from __future__ import annotations

import argparse

from fortemi.cli.common import Commands, load_settings

__all__ = ["add_mcp"]


def _mcp(args: argparse.Namespace) -> int:
    import os

    import anyio

    from fortemi.mcp.proxy import relay_stdio
    from fortemi.platform.errors import BadUserInput

    url = os.environ.get("FORTEMI_URL") or load_settings().base_url
    token = os.environ.get("FORTEMI_TOKEN")
    if not token:
        # Reported on stderr: stdout belongs to the protocol.
        raise BadUserInput("a token is needed in FORTEMI_TOKEN (`fortemi token` mints one)")
    anyio.run(relay_stdio, url, token, args.memory or os.environ.get("FORTEMI_MEMORY"))
    return 0


def add_mcp(commands: Commands) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="MCP server on stdio for local agents (FORTEMI_URL, FORTEMI_TOKEN)",
        description="Serve the Model Context Protocol on stdin/stdout, relaying each request "
        "to the server at FORTEMI_URL (default: the local server's /mcp) with the token in "
        "FORTEMI_TOKEN: tools, note resources and prompts, as that token's user.",
    )
    mcp.add_argument(
        "--memory",
        help="the memory tools use by default (default: FORTEMI_MEMORY, else the server's)",
    )
    mcp.set_defaults(run=_mcp)
