-- The graph's derived state: one vector per note for linking, communities, and the
-- diagnostics snapshots of graph maintenance.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.

-- A note's vector in a set (the normalised mean of its chunk vectors): what automatic
-- linking compares. Written by the Linking job (idempotent: the same chunks give the same
-- vector). Each set gets a partial HNSW index on a cast to its dimension, created by the
-- Linking job with the set's first note vector (note_embedding_hnsw_<set id>).
CREATE TABLE note_embedding (
    set_id      integer NOT NULL REFERENCES embedding_set (id) ON DELETE CASCADE,
    note_id     uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    embedding   vector NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (set_id, note_id)
);
ALTER TABLE note_embedding ALTER COLUMN embedding SET STORAGE PLAIN;

-- Louvain communities of the last maintenance run.
CREATE TABLE note_community (
    note_id       uuid PRIMARY KEY REFERENCES note (id) ON DELETE CASCADE,
    community     integer NOT NULL,
    confidence    real NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    computed_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX note_community_idx ON note_community (community);

CREATE TABLE graph_community (
    community     integer PRIMARY KEY,
    label         text,
    concept_id    uuid REFERENCES concept (id) ON DELETE SET NULL,
    size          integer NOT NULL CHECK (size >= 1),
    computed_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One row per maintenance run that wrote (a dry run reports its metrics and writes none).
CREATE TABLE graph_snapshot (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    taken_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    steps       text[] NOT NULL,
    metrics     jsonb NOT NULL CHECK (jsonb_typeof(metrics) = 'object'),
    created_by  text
);
