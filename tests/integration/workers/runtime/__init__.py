"""The worker runtime against real PostgreSQL and Redis: dispatch, execution, recovery."""
