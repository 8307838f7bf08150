"""Knowledge shards: a memory as a compressed tar of JSON-lines components with a
manifest of checksums, counts and a loss report (README: "Knowledge shards")."""

from fortemi.documents.shards.archive import Limits
from fortemi.documents.shards.manifest import Manifest
from fortemi.documents.shards.service import ImportOptions, ImportReport, ShardService

__all__ = ["ImportOptions", "ImportReport", "Limits", "Manifest", "ShardService"]
