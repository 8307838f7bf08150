"""Memories: isolated tenants, one PostgreSQL schema each."""

from fortemi.platform.memories.models import Memory
from fortemi.platform.memories.service import MemoryPolicyStore, MemoryService

__all__ = ["Memory", "MemoryPolicyStore", "MemoryService"]
