-- The per-memory template: notes, their immutable originals and their versions.
-- Runs with search_path set to the memory's schema; never name a schema here.

CREATE TABLE note (
    id               uuid PRIMARY KEY,
    title            text NOT NULL DEFAULT '',
    content          text NOT NULL DEFAULT '',
    format           text NOT NULL DEFAULT 'markdown',
    source           text,
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
    tags             text[] NOT NULL DEFAULT '{}',
    collection       text,
    project          text,
    starred          boolean NOT NULL DEFAULT false,
    archived         boolean NOT NULL DEFAULT false,
    version          integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    content_hash     text NOT NULL,
    external_source  text,
    external_id      text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    deleted_at       timestamptz,
    created_by       text,
    updated_by       text,
    CONSTRAINT note_external_key UNIQUE (external_source, external_id),
    CONSTRAINT note_external_both CHECK ((external_source IS NULL) = (external_id IS NULL))
);

-- Keyset pagination: newest first, id breaks ties.
CREATE INDEX note_created_idx ON note (created_at DESC, id DESC);
CREATE INDEX note_tags_idx ON note USING gin (tags);
CREATE INDEX note_project_idx ON note (project) WHERE project IS NOT NULL;

-- The content a note was created with, kept forever and hashed.
CREATE TABLE note_original (
    note_id       uuid PRIMARY KEY REFERENCES note (id) ON DELETE CASCADE,
    content       text NOT NULL,
    content_hash  text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Every state a note has had: version 1 is the original, each update adds one.
CREATE TABLE note_version (
    note_id       uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    version       integer NOT NULL CHECK (version >= 1),
    title         text NOT NULL,
    content       text NOT NULL,
    format        text NOT NULL,
    metadata      jsonb NOT NULL,
    tags          text[] NOT NULL,
    content_hash  text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by    text,
    PRIMARY KEY (note_id, version)
);

-- Originals and versions are history: they may be purged with their note, never edited.
CREATE FUNCTION reject_history_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'history rows are immutable' USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER note_original_immutable BEFORE UPDATE ON note_original
    FOR EACH ROW EXECUTE FUNCTION reject_history_update();
CREATE TRIGGER note_version_immutable BEFORE UPDATE ON note_version
    FOR EACH ROW EXECUTE FUNCTION reject_history_update();
