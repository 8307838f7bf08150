"""``fortemi serve | worker | token | migrate | audit | schema | vault | attach | import | ask |
graph | mcp | pke | shard``: the edge where settings are built."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from fortemi import console
from fortemi.cli.admin import add_audit, add_migrate, add_schema, add_token
from fortemi.cli.ask import add_ask
from fortemi.cli.files import add_files
from fortemi.cli.graph import add_graph
from fortemi.cli.mcp import add_mcp
from fortemi.cli.serve import add_serve, add_worker
from fortemi.cli.shard import add_shard
from fortemi.cli.vault import add_vault
from fortemi.crypto import commands as pke_commands
from fortemi.platform.errors import FortemiError

__all__ = ["main"]

_DESCRIPTION = """\
Fortemi: self-hosted, multi-tenant knowledge memory with a GraphQL API.

With nothing configured, `fortemi serve` starts its own PostgreSQL and Redis in the data
directory and prints an admin token; `fortemi token` mints more. Settings come from the
environment (FORTEMI_*, DATABASE_URL, REDIS_URL, OIDC_ISSUER, OLLAMA_HOST): see README.md.
"""
_EPILOG = "Run `fortemi <command> --help` for the options of a command."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fortemi",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"fortemi {console.program_version()}"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, title="commands", metavar="<command>"
    )
    for add in (
        add_serve,
        add_worker,
        add_token,
        add_migrate,
        add_audit,
        add_schema,
        add_vault,
        add_files,
        add_ask,
        add_graph,
        add_mcp,
        pke_commands.add_commands,
        add_shard,
    ):
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        with console.closed_pipe_guard():
            result: int = args.run(args)
    except FortemiError as exc:
        # An error a person can act on (a server down, bad input): its message, no traceback.
        raise SystemExit(f"fortemi {args.command}: {exc.message}") from None
    return result
