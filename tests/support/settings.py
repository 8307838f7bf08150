"""Settings built the way a deployment names them."""

from __future__ import annotations

from typing import Any

from fortemi.platform.settings import Settings

__all__ = ["settings_with"]


def settings_with(**values: Any) -> Settings:
    """``Settings(**values)``, where ``values`` may use the environment's names
    (``DATABASE_URL``, ``OIDC_ISSUER``, ...). Pydantic accepts those as validation aliases;
    its mypy plugin cannot read aliases given as ``AliasChoices`` and would refuse them."""
    return Settings(**values)
