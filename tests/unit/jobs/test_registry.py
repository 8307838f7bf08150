"""The job registry: unique names, checked defaults, lookups that say what is missing."""

from __future__ import annotations

import pytest

from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobType, Tier
from fortemi.platform.jobs.registry import JobRegistry


async def _handler(context: HandlerContext) -> JobOutcome:  # pragma: no cover
    return JobOutcome.success()


def _type(name: str = "ExtractNote", **fields: object) -> JobType:
    values: dict[str, object] = {"tier": Tier.CPU, "priority": 5, "handler": _handler}
    values.update(fields)
    return JobType(name, **values)  # type: ignore[arg-type]


def test_a_registered_type_is_found_by_name() -> None:
    registry = JobRegistry()
    extract, embed = _type("ExtractNote"), _type("EmbedNote", tier=Tier.FAST_GPU)
    registry.register(extract)
    registry.register(embed)
    assert registry.get("EmbedNote") is embed
    assert "ExtractNote" in registry
    assert "Unknown" not in registry
    assert registry.names() == ["EmbedNote", "ExtractNote"]


def test_registering_a_name_twice_is_refused_and_keeps_the_first() -> None:
    registry = JobRegistry()
    first = _type()
    registry.register(first)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(_type(priority=9))
    assert registry.get("ExtractNote") is first


def test_an_unknown_name_is_a_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="Missing"):
        JobRegistry().get("Missing")


@pytest.mark.parametrize(
    "job_type",
    [
        _type(""),
        _type("x" * 201),
        _type(priority=0),
        _type(priority=11),
        _type(priority=True),
        _type(tier="cpu"),
        _type(max_attempts=0),
    ],
    ids=["empty-name", "long-name", "priority-0", "priority-11", "priority-bool", "tier-str",
         "no-attempts"],
)  # fmt: skip
def test_a_type_with_invalid_defaults_is_refused(job_type: JobType) -> None:
    registry = JobRegistry()
    with pytest.raises(ValueError, match="must"):
        registry.register(job_type)
    assert registry.names() == []
