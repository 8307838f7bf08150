"""``fortemi ask``: a question answered by a server, printed with its sources."""

from __future__ import annotations

import argparse

from fortemi import console
from fortemi.cli.common import Commands, load_settings, seconds

__all__ = ["add_ask"]


def _ask(args: argparse.Namespace) -> int:
    import os

    from fortemi.wiki.answers.client import ASK_QUERY, print_answer
    from fortemi.wiki.vaults.client import VaultClient

    url = os.environ.get("FORTEMI_URL") or load_settings().base_url
    question = " ".join(args.question)
    variables = {
        "input": {
            "question": question,
            "project": args.project,
            "vault": args.vault,
            "tier": args.tier.upper(),
            "tokenBudget": args.token_budget,
        }
    }
    # The vault sync's GraphQL client: same FORTEMI_URL/FORTEMI_TOKEN, same error lines.
    client = VaultClient(url, os.environ.get("FORTEMI_TOKEN"), args.memory, timeout=args.timeout)
    try:
        return print_answer(client.request(ASK_QUERY, variables, "ask"))
    finally:
        client.close()


def add_ask(commands: Commands) -> None:
    ask = commands.add_parser(
        "ask",
        help="answer a question from a project's notes, with citations (FORTEMI_URL, "
        "FORTEMI_TOKEN)",
        description="Ask the server at FORTEMI_URL (default: the local server) a question, "
        "answered from the notes the token in FORTEMI_TOKEN may read. Prints the answer and "
        "its sources; without a generation backend (OLLAMA_HOST), the reason and the notes "
        "the plan selected. Exit code 3 when there is no answer.",
    )
    ask.add_argument("question", nargs="+", help="the question")
    ask.add_argument("--project", help="answer within this project's reach")
    ask.add_argument("--vault", help="only notes synced from this vault")
    ask.add_argument("--memory", help="the memory to ask in (default: the server's)")
    ask.add_argument("--tier", choices=["fast", "standard"], default="fast")
    ask.add_argument(
        "--token-budget", type=console.positive_int, default=4096, help="most prompt tokens"
    )
    ask.add_argument("--timeout", type=seconds, default=300.0, help="seconds to wait")
    ask.set_defaults(run=_ask)
