from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["Memory"]


@dataclass(frozen=True, slots=True)
class Memory:
    name: str
    is_default: bool
    schema_version: int
    created_at: datetime
    created_by: str | None
