-- Shared tables in the public schema: the memory registry.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE public.memory (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,39}$'),
    schema_version  integer NOT NULL DEFAULT 0,
    is_default      boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text
);

-- At most one default memory.
CREATE UNIQUE INDEX memory_single_default ON public.memory (is_default) WHERE is_default;
