"""A ``fortemi worker`` process running the test job types, for tests that kill workers.

    python -m tests.integration.workers.runtime.worker_main NAMESPACE LEASE_SECONDS GRACE_SECONDS

Reads DATABASE_URL, REDIS_URL and FORTEMI_HOME from the environment like ``fortemi
worker`` does, and runs :func:`run_worker_process` (the function the CLI calls) on the cpu
tier with one thread, with the test registry instead of the built-in one.
"""

from __future__ import annotations

import logging
import sys

from fortemi.platform.jobs.models import Tier
from fortemi.platform.settings import Settings
from fortemi.workers.pool import run_worker_process
from tests.integration.workers.runtime.jobtypes import build_registry


def main(argv: list[str]) -> int:
    namespace, lease_seconds, grace_seconds = argv[0], float(argv[1]), float(argv[2])
    logging.basicConfig(level="INFO", format="%(asctime)s %(name)s: %(message)s")
    return run_worker_process(
        Settings(),
        [Tier.CPU],
        1,
        registry=build_registry,
        lease_seconds=lease_seconds,
        namespace=namespace,
        grace_seconds=grace_seconds,
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
