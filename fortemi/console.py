"""The command line's edges: argument types, closed pipes, and how to name this program.

Everything here is about the terminal, not about Fortemi's features, so that ``fortemi.cli``
keeps to the commands themselves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TextIO, cast

from pydantic import ValidationError

__all__ = [
    "OutputClosed",
    "closed_pipe_guard",
    "describe_invalid_settings",
    "nonempty",
    "port",
    "positive_int",
    "program",
    "program_version",
]

# What a shell reports for a program stopped by SIGPIPE (128 + 13), as `git log | head`.
CLOSED_PIPE_EXIT = 141


class OutputClosed(Exception):
    """Whoever read our stdout went away (``fortemi ... | head``).

    Deliberately not an :class:`OSError`: layers that translate OSError into their own
    failures (the database's connection scope reads it as a lost server) must not claim
    a write to the terminal that happened inside them.
    """


class _GuardedStdout:
    """``sys.stdout`` whose broken-pipe errors are :class:`OutputClosed`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError as exc:
            raise OutputClosed from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError as exc:
            raise OutputClosed from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def closed_pipe_guard() -> Iterator[None]:
    """Run a command whose reader may close stdout early; such a stop is quiet.

    Raises ``SystemExit(141)`` when the reader went away: the output was cut short, so it
    is not a success, but nothing failed that a traceback could explain.
    """
    original = sys.stdout
    sys.stdout = cast(TextIO, _GuardedStdout(original))
    try:
        yield
        # Piped output is block-buffered: most of it reaches the pipe only here.
        sys.stdout.flush()
    except OutputClosed:
        # The interpreter flushes stdout again at exit; the pipe is still closed, so the
        # descriptor is pointed at /dev/null first (the recipe in Python's signal docs).
        devnull = os.open(os.devnull, os.O_WRONLY)
        # A stdout without a descriptor (an in-memory stream) has no pipe to fail again.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, original.fileno())
        os.close(devnull)
        raise SystemExit(CLOSED_PIPE_EXIT) from None
    finally:
        sys.stdout = original


def program() -> str:
    """How to run this same ``fortemi`` from any directory, quoted for a POSIX shell.

    ``fortemi`` when that name on PATH is this program; else the absolute path of the
    console script that started this process (``make serve`` runs ``.venv/bin/fortemi``,
    which is not on PATH); else this interpreter with ``-m fortemi``.
    """
    script = Path(sys.argv[0]).absolute() if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "fortemi" and script.is_file():
        on_path = shutil.which("fortemi")
        if on_path is not None and Path(on_path).absolute() == script:
            return "fortemi"
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m fortemi"


def program_version() -> str:
    try:
        return version("fortemi")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def describe_invalid_settings(exc: ValidationError) -> str:
    """One line per bad setting, named as it is set (``FORTEMI_PORT``, ``DATABASE_URL``)."""
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        setting = name if name.isupper() else f"FORTEMI_{name.upper()}"
        lines.append(f"  {setting}: {error['msg']}")
    return "\n".join(lines)


# -- argument types: argparse turns their ArgumentTypeError into a one-line usage error --


def port(text: str) -> int:
    number = _integer(text)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port number (1-65535)")
    return number


def positive_int(text: str) -> int:
    number = _integer(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return number


def nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
