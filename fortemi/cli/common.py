"""What every command shares: settings built at the edge, logging, argument types, and
the signal handling that lets ``finally`` blocks stop what a command started."""

from __future__ import annotations

import argparse
import signal
from types import FrameType
from typing import Any, TypeAlias

from pydantic import ValidationError

from fortemi import console
from fortemi.platform.logs import configure_logging
from fortemi.platform.settings import Settings

__all__ = [
    "Commands",
    "Stop",
    "load_settings",
    "raise_stop",
    "seconds",
    "setup_logging",
    "ttl",
]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Stop(Exception):
    """Raised by our SIGINT/SIGTERM handler so ``finally`` blocks stop what we started."""


def raise_stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def load_settings(**overrides: Any) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise SystemExit(
            f"fortemi: invalid configuration:\n{console.describe_invalid_settings(exc)}"
        ) from None


def setup_logging(settings: Settings) -> None:
    configure_logging(settings.log_level, settings.log_format)


def ttl(text: str) -> Any:
    """A token lifetime; as an argument type, a bad one is a one-line usage error."""
    from fortemi.auth.local_issuer import parse_ttl

    try:
        return parse_ttl(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"must be more than 0 and less than a day: {text!r}")
    return value
