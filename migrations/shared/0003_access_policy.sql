-- Access policies set at runtime (the API's setPolicy), beside the YAML files.
-- One row per resource: (resource_type, memory, name). memory NULL = every memory (shared
-- skills; projects meant for all memories). A memory's own policy has memory = name.
-- The document is the same JSON a YAML policy file holds; the application validates it
-- before storing (fortemi.auth.policy.validation), so only the shape is checked here.
CREATE TABLE public.access_policy (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_type  text NOT NULL CHECK (resource_type IN ('project', 'skill', 'memory')),
    -- ON DELETE CASCADE: a memory re-created under an old name must not inherit the old
    -- memory's rules.
    memory         text REFERENCES public.memory (name) ON DELETE CASCADE,
    name           text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    document       jsonb NOT NULL CHECK (jsonb_typeof(document) = 'object'),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    updated_by     text NOT NULL,
    CHECK (resource_type <> 'skill' OR memory IS NULL),
    CHECK (resource_type <> 'memory' OR memory = name)
);

-- NULL memories are equal here (coalesce), so "every memory" has one row per resource.
CREATE UNIQUE INDEX access_policy_resource
    ON public.access_policy (resource_type, (coalesce(memory, '')), name);
