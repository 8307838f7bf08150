"""Small SQL building blocks shared by the repositories.

* :class:`Table` declares a table's columns once, from the model dataclass its rows map to,
  and derives from that declaration everything a repository needs:

  - ``table.select_list`` (``"id, title, ..."``), ``table.select_list_of("n")``
    (``"n.id, n.title, ..."``);
  - ``table.from_record(record)``: an ``asyncpg.Record`` (or any mapping with those keys)
    to the model, converting by the field's annotation: ``tuple[...]`` from a list, an
    ``Enum`` from its value, ``X | None`` keeping None; ``convert=`` overrides one field
    (a NULL stays None: no converter sees it);
  - ``table.query(sql, **declared)``: a :class:`Query` from SQL text in which
    ``{columns}``, ``{alias.columns}`` and ``{table}`` stand for the declared select list
    and name, and ``{key}`` for ``declared[key]`` (another table's ``select_list``);
  - ``table.insert(...)``: ``INSERT INTO name (cols) VALUES (:col, ...)`` over the declared
    columns (or the ones named; ``values=`` gives a column a fixed SQL expression instead
    of its bind), and ``table.binds(row)``: a model instance as bind values;
  - ``table.names("a", "b", alias="l")``: ``"l.a, l.b"``, a statement's own selection of
    the declared columns; a name the declaration lacks is a TypeError at import.

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
* :class:`KeysetCursor` and :class:`SerialCursor` are the one cursor codec of every list:
  a position (``created_at DESC, id DESC``, or a serial ``id DESC``) as an opaque cursor,
  base64url, unpadded, of the JSON ``[tag, *position]``. The tag keeps one list's cursor
  from being read as another's and lets the format change later. A cursor only names a
  position, so a forged one can at most start a page elsewhere; anything that does not
  decode to a position is the caller's error, never a server error.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar
from uuid import UUID

from fortemi.platform.errors import BadUserInput
from fortemi.platform.pages import Page, page_of

__all__ = [
    "BindError",
    "KeysetCursor",
    "Query",
    "Row",
    "SerialCursor",
    "Table",
    "Where",
    "named",
]

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

    def names(self, *columns: str, alias: str | None = None) -> str:
        """``columns`` as a list (each ``alias.``-qualified when given), checked against
        the declaration: a statement naming a column of its own still spells it once."""
        self._check(columns)
        return ", ".join(column if alias is None else f"{alias}.{column}" for column in columns)

    def _check(self, columns: Iterable[str]) -> None:
        unknown = [column for column in columns if column not in self.columns]
        if unknown:
            raise TypeError(f"{self.name} declares no column {', '.join(unknown)}")

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

    def insert(
        self,
        columns: Iterable[str] | None = None,
        *,
        suffix: str = "",
        values: Mapping[str, str] | None = None,
    ) -> Query:
        """``INSERT INTO table (cols) VALUES (:col, ...)`` then ``suffix`` (``ON CONFLICT``,
        ``RETURNING {columns}``...), over the declared columns or those named (each must be
        declared). ``values`` maps a column to the fixed SQL expression it takes instead of
        its bind (a literal, ``clock_timestamp()``): statement text, never a value."""
        names = self.columns if columns is None else tuple(columns)
        expressions = dict(values or {})
        self._check([*names, *expressions])
        stray = [column for column in expressions if column not in names]
        if stray:
            raise TypeError(f"values names a column the insert lacks: {', '.join(stray)}")
        binds = ", ".join(expressions.get(name, f":{name}") for name in names)
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
_MAX_UUID = 2**128 - 1
# The greatest bigint is no cursor's: ``SerialCursor.through`` adds one to an id, and the
# sum must still bind as a bigint. A serial never gets there.
_MAX_SERIAL = 2**63 - 1


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


class _Created(Protocol):
    """A row a :class:`KeysetCursor` pages over."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> UUID: ...


class _Serial(Protocol):
    """A row a :class:`SerialCursor` pages over."""

    @property
    def id(self) -> int: ...


def _pack(*parts: str | int) -> str:
    payload = json.dumps(list(parts), separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode("ascii")).rstrip(b"=").decode("ascii")


def _unpack(cursor: str, tag: str, count: int) -> list[Any]:
    """The ``count`` parts after ``tag`` that ``cursor`` carries; BadUserInput otherwise."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
        raise _invalid()
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        parts = json.loads(raw.decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        # json.JSONDecodeError is a ValueError.
        raise _invalid() from exc
    if not isinstance(parts, list) or len(parts) != count + 1 or parts[0] != tag:
        raise _invalid()
    return parts[1:]


_C = TypeVar("_C", bound=_Created)
_S = TypeVar("_S", bound=_Serial)


class KeysetCursor:
    """Cursors over a list ordered ``created_at DESC, id DESC``."""

    def __init__(self, tag: str) -> None:
        self._tag = tag

    def encode(self, created_at: datetime, item_id: UUID) -> str:
        return _pack(self._tag, created_at.isoformat(), str(item_id))

    def decode(self, cursor: str) -> tuple[datetime, UUID]:
        """The (created_at, id) position ``cursor`` names; BadUserInput if it names none."""
        created_at, item_id = _unpack(cursor, self._tag, 2)
        if not isinstance(created_at, str) or not isinstance(item_id, str):
            raise _invalid()
        try:
            position = datetime.fromisoformat(created_at), UUID(item_id)
        except ValueError as exc:
            raise _invalid() from exc
        if position[0].tzinfo is None:
            raise _invalid()
        return position

    @staticmethod
    def through(position: tuple[datetime, UUID] | None) -> tuple[datetime, UUID] | None:
        """The least position past ``position``: rows strictly before it are ``position``'s
        own row and those after it, as :func:`~fortemi.platform.pages.page_of` needs.

        No uuid lies between an id and the next integer (PostgreSQL orders uuid by its 16
        bytes, big-endian), and past the greatest uuid comes the next microsecond
        (timestamptz's resolution) with the least.
        """
        if position is None:
            return None
        created_at, item_id = position
        if item_id.int == _MAX_UUID:
            return created_at + timedelta(microseconds=1), UUID(int=0)
        return created_at, UUID(int=item_id.int + 1)

    def page(
        self, rows: Sequence[_C], *, limit: int, after: tuple[datetime, UUID] | None
    ) -> Page[_C]:
        """:func:`~fortemi.platform.pages.page_of` for rows read past :meth:`through`."""
        return page_of(
            rows,
            limit=limit,
            after=after,
            key=lambda row: (row.created_at, row.id),
            cursor=lambda key: self.encode(*key),
        )


class SerialCursor:
    """Cursors over a list ordered by a positive bigint ``id DESC``."""

    def __init__(self, tag: str) -> None:
        self._tag = tag

    def encode(self, item_id: int) -> str:
        return _pack(self._tag, item_id)

    def decode(self, cursor: str) -> int:
        """The id ``cursor`` names; BadUserInput if it names none."""
        (item_id,) = _unpack(cursor, self._tag, 1)
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise _invalid()
        if not 0 < item_id < _MAX_SERIAL:
            raise _invalid()
        return item_id

    @staticmethod
    def through(position: int | None) -> int | None:
        """The least id past ``position`` (see :meth:`KeysetCursor.through`)."""
        return None if position is None else position + 1

    def page(self, rows: Sequence[_S], *, limit: int, after: int | None) -> Page[_S]:
        return page_of(rows, limit=limit, after=after, key=lambda row: row.id, cursor=self.encode)


def _invalid() -> BadUserInput:
    return BadUserInput(
        "after is not a valid cursor; pass the cursor of an item from a previous page",
        field="after",
    )
