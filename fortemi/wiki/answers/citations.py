"""The numbers a model cited: ``[2]``, ``[1, 3]``, ``[1][2]``.

Hand-written: the marks are the ones the prompt's instructions ask for, and nothing
else in an answer is parsed. A number that names no selected chunk (the model invented
it, or copied a number from a chunk's text) is dropped and counted, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fortemi.wiki.answers.models import Citation
from fortemi.wiki.retrieve.models import Candidate

__all__ = ["cited"]

_MARK = re.compile(r"\[\s*(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\s*\]")


def cited(text: str, chunks: Sequence[Candidate]) -> tuple[list[Citation], int]:
    """The citations of ``text`` naming ``chunks`` (1-based, prompt order), in order of
    first mention, and how many distinct cited numbers named none."""
    numbers: list[int] = []
    for mark in _MARK.finditer(text):
        for part in re.split(r"[,;]", mark.group(1)):
            number = int(part)
            if number not in numbers:
                numbers.append(number)
    found = [Citation(n, chunks[n - 1]) for n in numbers if 1 <= n <= len(chunks)]
    return found, len(numbers) - len(found)
