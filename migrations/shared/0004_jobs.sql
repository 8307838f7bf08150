-- Durable jobs (fortemi/workers/jobs). A row is the job; a Dramatiq message only carries
-- its id and says "there is work", so PostgreSQL is the one source of truth. The relay
-- re-sends a message for pending rows whose enqueued_at is NULL or stale.
--
-- Every time here comes from PostgreSQL's clock, so workers on many hosts agree.

CREATE TABLE public.job (
    id                uuid PRIMARY KEY,
    -- ON DELETE CASCADE: a deleted memory's work is moot, and a memory re-created under an
    -- old name must not inherit it. NULL: a job over the whole installation.
    memory            text REFERENCES public.memory (name) ON DELETE CASCADE,
    type              text NOT NULL CHECK (char_length(type) BETWEEN 1 AND 200),
    tier              text NOT NULL CHECK (tier IN ('cpu', 'fast_gpu', 'standard_gpu')),
    priority          smallint NOT NULL CHECK (priority BETWEEN 1 AND 10),
    status            text NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
    payload           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts      integer NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    progress          smallint NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    progress_message  text,
    failure_class     text CHECK (failure_class IN
                          ('transient', 'rate_limited', 'timeout', 'stale_worker', 'permanent')),
    failure_code      text,
    result            jsonb,
    dedupe_key        text CHECK (char_length(dedupe_key) BETWEEN 1 AND 400),
    requested_by      text,
    lease_owner       text,
    lease_expires_at  timestamptz,
    -- When a message was last sent for this row; NULL means one is due.
    enqueued_at       timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- Exactly the running jobs hold a lease, so "finish only under your lease" is a
    -- question about two columns.
    CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);

-- At most one pending job per dedupe key. Enqueue inserts ON CONFLICT against this index,
-- so two transactions enqueueing the same work at once still make one job. A running or
-- finished job does not hold its key: a change after work started needs a new run.
CREATE UNIQUE INDEX job_pending_dedupe ON public.job (dedupe_key)
    WHERE status = 'pending' AND dedupe_key IS NOT NULL;

-- The claim path: per tier, best priority first, then oldest runnable.
CREATE INDEX job_claim ON public.job (tier, priority DESC, next_attempt_at, created_at)
    WHERE status = 'pending';

-- The reaper's scan for expired leases.
CREATE INDEX job_running_lease ON public.job (lease_expires_at) WHERE status = 'running';

-- Listing, newest first (the keyset order): all jobs, and one memory's (the API lists a
-- memory's jobs; the memory prefix also serves the ON DELETE CASCADE lookup).
CREATE INDEX job_listing ON public.job (created_at DESC, id DESC);
CREATE INDEX job_memory ON public.job (memory, created_at DESC, id DESC);

-- Paused claiming: a row per paused memory; the row with NULL memory pauses everything.
-- Pending jobs stay queued while paused; running ones finish.
CREATE TABLE public.job_pause (
    memory     text REFERENCES public.memory (name) ON DELETE CASCADE,
    paused_at  timestamptz NOT NULL DEFAULT now(),
    paused_by  text
);

-- NULL memories are equal here (coalesce), so there is one global pause row at most.
CREATE UNIQUE INDEX job_pause_memory ON public.job_pause ((coalesce(memory, '')));
