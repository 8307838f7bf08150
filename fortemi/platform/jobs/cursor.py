"""Opaque page cursors over jobs (see :class:`fortemi.platform.sql.KeysetCursor`).

The ``"j1"`` tag keeps a note cursor (``"n1"``) from being read as a job position.
"""

from __future__ import annotations

from fortemi.platform.sql import KeysetCursor

__all__ = ["decode_cursor", "encode_cursor", "keyset_page", "through"]

_CURSOR = KeysetCursor("j1")
encode_cursor = _CURSOR.encode
decode_cursor = _CURSOR.decode
through = _CURSOR.through
keyset_page = _CURSOR.page
