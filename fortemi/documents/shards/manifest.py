"""The shard manifest (``manifest.json``, the archive's first member) and the format's
stable error reasons.

The manifest is read with pydantic and must match exactly (unknown fields refused): a
newer writer that adds anything a reader must understand raises ``min_reader_version``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fortemi.platform.errors import BadUserInput

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "READER_VERSION",
    "SHARD_VERSION",
    "ComponentEntry",
    "LossEntry",
    "Manifest",
    "TableEntry",
    "parse_manifest",
    "refused",
]

FORMAT = "fortemi-shard"
SHARD_VERSION = 1
READER_VERSION = 1  # the newest min_reader_version this code reads
MANIFEST_NAME = "manifest.json"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_NAME = r"^[a-z][a-z0-9_]{0,62}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TableEntry(_Strict):
    name: Annotated[str, Field(pattern=_NAME)]
    count: Annotated[int, Field(ge=0)]
    columns: list[Annotated[str, Field(pattern=_NAME)]]


class ComponentEntry(_Strict):
    name: Annotated[str, Field(pattern=_NAME)]
    path: Annotated[str, Field(pattern=r"^components/[a-z][a-z0-9_]{0,62}\.jsonl$")]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    bytes: Annotated[int, Field(ge=0)]
    count: Annotated[int, Field(ge=0)]
    tables: list[TableEntry]


class LossEntry(_Strict):
    code: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,80}$")]
    component: str
    table: str | None = None
    rows: Annotated[int, Field(ge=0)]
    description: str


class Manifest(_Strict):
    format: Literal["fortemi-shard"]
    shard_version: Annotated[int, Field(ge=1)]
    min_reader_version: Annotated[int, Field(ge=1)]
    producer: str
    profile: Literal["core-v1", "full-v1"]
    created_at: datetime
    memory: str
    options: dict[str, bool]
    components: list[ComponentEntry]
    loss: list[LossEntry]

    def to_json(self) -> bytes:
        return self.model_dump_json(indent=2).encode() + b"\n"


def refused(reason: str, message: str, **extensions: Any) -> BadUserInput:
    """A refused shard: ``reason`` is the stable code clients and tests match on."""
    return BadUserInput(message, reason=reason, **extensions)


def parse_manifest(data: bytes) -> Manifest:
    """The manifest, or ``shard_bad_manifest`` / ``shard_reader_too_old``."""
    try:
        raw = Manifest.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "manifest"
        raise refused(
            "shard_bad_manifest", f"The shard's manifest is invalid at {where}: {first['msg']}"
        ) from None
    if raw.min_reader_version > READER_VERSION:
        raise refused(
            "shard_reader_too_old",
            f"This shard needs reader version {raw.min_reader_version}; this Fortemi reads "
            f"up to {READER_VERSION}: upgrade Fortemi to import it",
        )
    names = [c.name for c in raw.components]
    if len(set(names)) != len(names):
        raise refused("shard_bad_manifest", "The shard's manifest names a component twice")
    for component in raw.components:
        if component.count != sum(t.count for t in component.tables):
            raise refused(
                "shard_bad_manifest",
                f"Component {component.name}: its count is not the sum of its tables' counts",
            )
    return raw
