"""Opaque page cursors over notes (see :class:`fortemi.platform.sql.KeysetCursor`)."""

from __future__ import annotations

from fortemi.platform.sql import KeysetCursor

__all__ = ["decode_cursor", "encode_cursor", "keyset_page", "through"]

_CURSOR = KeysetCursor("n1")
encode_cursor = _CURSOR.encode
decode_cursor = _CURSOR.decode
through = _CURSOR.through
keyset_page = _CURSOR.page
