"""What a job event says about an escalated job."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from fortemi.platform.jobs.events import job_event
from fortemi.platform.jobs.models import Job, JobStatus, Tier


def test_an_escalation_is_announced_without_what_the_tier_below_carried() -> None:
    now = datetime.now(UTC)
    origin = uuid4()
    escalation = {
        "origin": str(origin), "fromJob": str(origin), "fromTier": "cpu",
        "reason": "too_few_concepts", "path": ["cpu"],
        "carried": {"tier": "cpu", "concepts": [{"path": ["a secret project"]}]},
    }  # fmt: skip
    job = Job(
        id=uuid4(), memory="m", type="ConceptTagging", tier=Tier.FAST_GPU, priority=3,
        status=JobStatus.PENDING, payload={"note_id": "n", "escalation": escalation},
        attempts=0, max_attempts=5, next_attempt_at=now, progress=0, progress_message=None,
        failure_class=None, failure_code=None, result=None, dedupe_key=None,
        requested_by=None, created_at=now, started_at=None, finished_at=None,
    )  # fmt: skip
    event = job_event(job, "job.created")
    assert event.payload["escalation"] == {
        key: value for key, value in escalation.items() if key != "carried"
    }
    assert "a secret project" not in repr(event.payload)
    assert job.payload["escalation"]["carried"]  # the job itself keeps it for its handler
