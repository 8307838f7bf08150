"""Small SQL building blocks shared by the repositories.

* :class:`Table` declares a table's columns once, from the model dataclass its rows map to,
  and derives from that declaration everything a repository needs:

  - ``table.select_list`` (``"id, title, ..."``), ``table.select_list_of("n")``
    (``"n.id, n.title, ..."``);
  - ``table.from_record(record)``: an ``asyncpg.Record`` (or any mapping with those keys)
    to the model, converting by the field's annotation: ``tuple[...]`` from a list, an
    ``Enum`` from its value, ``X | None`` keeping None; ``convert=`` overrides one field;
  - ``table.query(sql, **declared)``: a :class:`Query` from SQL text in which
    ``{columns}``, ``{alias.columns}`` and ``{table}`` stand for the declared select list
    and name, and ``{key}`` for ``declared[key]`` (another table's ``select_list``);
  - ``table.insert(...)``: ``INSERT INTO name (cols) VALUES (:col, ...)`` over the declared
    columns (or the ones named), and ``table.binds(row)``: a model instance as bind values.

  ``Table("note", Note, convert=..., omit=...)``: ``omit`` names fields the table does not
  store (they must have defaults). A field added to the model is selected, mapped and
  inserted without another edit; a column the model lacks is simply never read.

* :class:`Query` compiles SQL with NAMED binds (``:name``, ``:name::type``) once, at import,
  into asyncpg's ``$n`` text; ``query.args(**values)`` returns the positional tuple in the
  right order, every name bound exactly once however often it appears. A bind with no value
  raises :class:`BindError` (never a silent NULL), and so does a value no bind uses (a
  misspelt name). ``named(sql, **values)`` does both steps for a one-off statement. A
  ``:word`` inside a string literal would be read as a bind: statements keep literals free of
  it (``::type`` casts and ``[1:2]`` slices are not binds).

  Usage: ``_GET = NOTE.query("SELECT {columns} FROM note WHERE id = :id")``, then
  ``NOTE.from_record(await conn.fetchrow(_GET.sql, *_GET.args(id=note_id)))``.

  Why a hand-written mapper and not SQLAlchemy Core or SQLModel: the repositories already
  write PostgreSQL-specific SQL (data-modifying CTEs, ``ON CONFLICT`` on partial indexes,
  ``SKIP LOCKED``, ``unnest ... WITH ORDINALITY``) that an expression language would only
  re-spell, and the models are frozen slotted dataclasses shared with the services. What was
  missing is a single declaration and named binds; this module adds them for microseconds
  per row (``benchmarks/sql_mapping.py`` measures it) and no session, identity map or
  unit of work on the hot path. Substitution only ever splices the declared identifiers,
  never a value, which is why statements built here need no ``noqa: S608``.

* :class:`Where` builds a WHERE clause from fixed fragments, every value a ``$n``
  parameter: filters never splice caller input into SQL text.
* :class:`KeysetCursor` encodes a list position (``created_at DESC, id DESC``) as an opaque
  cursor: base64url, unpadded, of the JSON ``[tag, created_at ISO-8601, id]``. The tag keeps
  one list's cursor from being read as another's and lets the format change later. A
  cursor only names a position, so a forged one can at most start a page elsewhere;
  anything that does not decode to a position is the caller's error, never a server error.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar
from uuid import UUID

from fortemi.platform.errors import BadUserInput

__all__ = ["BindError", "KeysetCursor", "Query", "Row", "Table", "Where", "named"]

M = TypeVar("M")

# ``:name`` not preceded by a colon or a word character: ``::type`` casts, ``$1::uuid`` and
# array slices ``[1:2]`` are left alone.
_BIND = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_COLUMNS_SLOT = re.compile(r"\{(?:([A-Za-z_]\w*)\.)?columns\}")


class Row(Protocol):
    """What :meth:`Table.from_record` reads: an ``asyncpg.Record`` or a plain mapping."""

    def __getitem__(self, key: str, /) -> Any: ...


class BindError(ValueError):
    """A statement's named binds and the values given for them disagree."""


class Query:
    """SQL with ``:name`` binds, compiled once to ``$n`` text (:attr:`sql`).

    :meth:`args` returns the values in ``$n`` order; a name used twice is one ``$n``.
    """

    __slots__ = ("_names", "_positions", "names", "sql")

    def __init__(self, sql: str) -> None:
        positions: dict[str, int] = {}

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in positions:
                positions[name] = len(positions) + 1
            return f"${positions[name]}"

        self.sql: str = _BIND.sub(number, sql)
        self.names: tuple[str, ...] = tuple(positions)
        self._names = frozenset(positions)
        self._positions = positions

    def args(self, values: Mapping[str, Any] | None = None, /, **more: Any) -> tuple[Any, ...]:
        """The positional arguments for :attr:`sql`; BindError if a bind has no value or a
        value has no bind. A name in both ``values`` and ``more`` takes ``more``'s value."""
        given: Mapping[str, Any]
        if values is None:
            given = more
        elif more:
            given = {**values, **more}
        else:
            given = values
        try:
            bound = tuple([given[name] for name in self.names])
        except KeyError as exc:
            raise self._mismatch(given) from exc
        if len(given) != len(self.names):
            raise self._mismatch(given)
        return bound

    def _mismatch(self, given: Mapping[str, Any]) -> BindError:
        missing = sorted(self._names.difference(given))
        unknown = sorted(set(given).difference(self._names))
        parts = []
        if missing:
            parts.append("no value for " + ", ".join(f":{n}" for n in missing))
        if unknown:
            parts.append("no bind for " + ", ".join(unknown))
        return BindError("; ".join(parts) + f" in: {' '.join(self.sql.split())[:200]}")


def named(sql: str, /, **values: Any) -> tuple[str, tuple[Any, ...]]:
    """``sql`` with its ``:name`` binds as ``$n`` and the values in that order."""
    query = Query(sql)
    return query.sql, query.args(values)


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How a database value becomes the field's type, when it is not already that type."""
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        converters = [_converter(arg) for arg in typing.get_args(hint) if arg is not type(None)]
        return converters[0] if len(converters) == 1 else None
    if origin is tuple:
        return tuple
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    return None


class Table(Generic[M]):
    """A table's columns, declared once as the fields of the dataclass its rows map to."""

    def __init__(
        self,
        name: str,
        model: type[M],
        *,
        omit: Iterable[str] = (),
        convert: Mapping[str, Callable[[Any], Any]] | None = None,
    ) -> None:
        if not dataclasses.is_dataclass(model):
            raise TypeError(f"{model!r} is not a dataclass")
        omitted = frozenset(omit)
        fields = [f for f in dataclasses.fields(model) if f.name not in omitted]
        unknown = omitted.difference(f.name for f in dataclasses.fields(model))
        if unknown:
            raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
        hints = typing.get_type_hints(model)
        overrides = dict(convert or {})
        self.name = name
        self.model = model
        self.columns: tuple[str, ...] = tuple(f.name for f in fields)
        self.select_list = ", ".join(self.columns)
        self._convert: tuple[tuple[int, Callable[[Any], Any]], ...] = tuple(
            (i, conv)
            for i, f in enumerate(fields)
            if (conv := overrides.pop(f.name, None) or _converter(hints[f.name])) is not None
        )
        # Fields whose Python value asyncpg would not take as is (a tuple, an enum).
        self._bindable = tuple(f.name for f in fields if _converter(hints[f.name]) is not None)
        if overrides:
            raise TypeError(f"convert names no column of {name}: {', '.join(sorted(overrides))}")
        # Positional construction is the fast path; it is only right when the stored
        # fields are the model's leading fields in order (the rest take their defaults).
        self._positional = [f.name for f in dataclasses.fields(model)][: len(fields)] == list(
            self.columns
        )

    def select_list_of(self, alias: str) -> str:
        return ", ".join(f"{alias}.{column}" for column in self.columns)

    def query(self, sql: str, **declared: str) -> Query:
        """A :class:`Query` of ``sql`` with ``{columns}``, ``{alias.columns}`` and
        ``{table}`` replaced by the declaration, and each ``{key}`` of ``declared`` by its
        text: another table's select list, never a value."""

        def columns(match: re.Match[str]) -> str:
            alias = match.group(1)
            return self.select_list if alias is None else self.select_list_of(alias)

        text = _COLUMNS_SLOT.sub(columns, sql).replace("{table}", self.name)
        for key, fragment in declared.items():
            text = text.replace(f"{{{key}}}", fragment)
        return Query(text)

    def insert(self, columns: Iterable[str] | None = None, *, suffix: str = "") -> Query:
        """``INSERT INTO table (cols) VALUES (:col, ...)`` then ``suffix`` (``ON CONFLICT``,
        ``RETURNING {columns}``...), over the declared columns or those named."""
        names = self.columns if columns is None else tuple(columns)
        binds = ", ".join(f":{name}" for name in names)
        # Only declared identifiers and bind names are spliced, never a value.
        sql = f"INSERT INTO {self.name} ({', '.join(names)}) VALUES ({binds}) {suffix}"  # noqa: S608
        return self.query(sql.rstrip())

    def binds(self, row: M, *, omit: Iterable[str] = ()) -> dict[str, Any]:
        """``row``'s stored fields as bind values (tuples as lists, enums as values)."""
        values = {name: getattr(row, name) for name in self.columns}
        for name in self._bindable:
            value = values[name]
            if value is not None:
                values[name] = _bindable(value)
        for name in omit:
            del values[name]
        return values

    def from_record(self, record: Row) -> M:
        values = [record[column] for column in self.columns]
        for i, conv in self._convert:
            value = values[i]
            if value is not None:
                values[i] = conv(value)
        if self._positional:
            return self.model(*values)
        return self.model(**dict(zip(self.columns, values, strict=True)))

    def from_records(self, records: Iterable[Row]) -> list[M]:
        return [self.from_record(record) for record in records]


def _bindable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Enum):
        return value.value
    return value


# A real cursor is about 110 characters; anything far longer is not one of ours.
_MAX_CURSOR_CHARS = 256


class Where:
    """A WHERE clause from fixed fragments; every value becomes the next ``$n``."""

    def __init__(self, *leading: Any) -> None:
        """``leading``: values the rest of the statement binds first, as ``$1``.. ``$n``."""
        self.clauses: list[str] = []
        self.args: list[Any] = list(leading)

    def add(self, fragment: str, *values: Any) -> None:
        """``fragment`` names its values ``{0}``, ``{1}``...; they become placeholders."""
        first = len(self.args) + 1
        self.args.extend(values)
        self.clauses.append(fragment.format(*(f"${first + i}" for i in range(len(values)))))

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "true"


class KeysetCursor:
    def __init__(self, tag: str) -> None:
        self._tag = tag

    def encode(self, created_at: datetime, item_id: UUID) -> str:
        payload = json.dumps(
            [self._tag, created_at.isoformat(), str(item_id)], separators=(",", ":")
        )
        return base64.urlsafe_b64encode(payload.encode("ascii")).rstrip(b"=").decode("ascii")

    def decode(self, cursor: str) -> tuple[datetime, UUID]:
        """The (created_at, id) position ``cursor`` names; BadUserInput if it names none."""
        if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
            raise _invalid()
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            raw = base64.b64decode(padded, altchars=b"-_", validate=True)
            tag, created_at, item_id = json.loads(raw.decode("ascii"))
            if tag != self._tag or not isinstance(created_at, str) or not isinstance(item_id, str):
                raise _invalid()
            position = datetime.fromisoformat(created_at), UUID(item_id)
        except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as exc:
            # json.JSONDecodeError is a ValueError; unpacking a wrong shape is Value/TypeError.
            raise _invalid() from exc
        if position[0].tzinfo is None:
            raise _invalid()
        return position


def _invalid() -> BadUserInput:
    return BadUserInput(
        "after is not a valid cursor; pass the cursor of an item from a previous page",
        field="after",
    )
