"""The suite's own access policies: a fixture set the tests own, never ``./policies``.

``./policies`` is the shipped example set that users edit; a test reading it would pass
or fail with their edits. Every test, fixture and process the suite starts reads this
folder instead (the session's ``settings`` fixture points ``policy_dir`` at it).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURE_POLICIES"]

FIXTURE_POLICIES = Path(__file__).resolve().parents[1] / "data" / "policies"
