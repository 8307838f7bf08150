"""Checks on vocabulary input, before any SQL: labels, languages, URIs, enumerations."""

from __future__ import annotations

import math
import re

from fortemi.graph.vocabulary.models import DIMENSIONS, LABEL_KINDS, MAX_LABEL_CHARS, STATUSES
from fortemi.platform.errors import BadUserInput

__all__ = [
    "check_confidence",
    "check_dimension",
    "check_kind",
    "check_label",
    "check_lang",
    "check_status",
    "check_text",
    "check_title",
    "check_uri",
]

# BCP 47's shape (language, then subtags), as RDF literals carry it; '' is no language.
_LANG = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_MAX_URI = 2000
_MAX_TEXT = 20_000


def _clean(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise BadUserInput(f"{field} must be text", field=field)
    if "\x00" in value:
        raise BadUserInput(f"{field} cannot contain NUL characters", field=field)
    return value.strip()


def check_label(value: object, field: str = "label") -> str:
    label = _clean(value, field)
    if not 1 <= len(label) <= MAX_LABEL_CHARS:
        raise BadUserInput(f"{field} must have 1 to {MAX_LABEL_CHARS} characters", field=field)
    return label


def check_title(value: object, field: str = "title") -> str:
    title = _clean(value, field)
    if not 1 <= len(title) <= 500:
        raise BadUserInput(f"{field} must have 1 to 500 characters", field=field)
    return title


def check_text(value: object, field: str) -> str | None:
    """Optional free text (definition, scope note, description); blank means none."""
    if value is None:
        return None
    text = _clean(value, field)
    if len(text) > _MAX_TEXT:
        raise BadUserInput(f"{field} has at most {_MAX_TEXT} characters", field=field)
    return text or None


def check_lang(value: object, field: str = "lang") -> str:
    if value is None:
        return ""
    lang = _clean(value, field)
    if lang and not _LANG.fullmatch(lang):
        raise BadUserInput(
            f"{field} must be a language tag such as 'en' or 'pt-BR', or empty; got {lang!r}",
            field=field,
        )
    return lang.lower()


def check_uri(value: object, field: str = "uri") -> str | None:
    if value is None:
        return None
    uri = _clean(value, field)
    if not uri:
        return None
    if len(uri) > _MAX_URI or not _URI.fullmatch(uri):
        raise BadUserInput(
            f"{field} must be an absolute URI such as https://example.org/c/1", field=field
        )
    return uri


def _one_of(value: object, choices: tuple[str, ...], field: str) -> str:
    if value not in choices:
        raise BadUserInput(
            f"{field} must be one of {', '.join(choices)}; got {value!r}", field=field
        )
    return str(value)


def check_dimension(value: object) -> str | None:
    return None if value is None else _one_of(value, DIMENSIONS, "dimension")


def check_status(value: object) -> str:
    return _one_of(value, STATUSES, "status")


def check_kind(value: object) -> str:
    return _one_of(value, LABEL_KINDS, "kind")


def check_confidence(value: object, field: str = "confidence") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadUserInput(f"{field} must be a number from 0 to 1", field=field)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise BadUserInput(f"{field} must be a number from 0 to 1; got {value!r}", field=field)
    return float(value)
