-- The memory's SKOS vocabulary: concept schemes, concepts with their labels, semantic
-- relations and collections, and the concepts attached to notes.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.

CREATE TABLE concept_scheme (
    id           uuid PRIMARY KEY,
    uri          text UNIQUE,
    title        text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 500),
    description  text,
    -- The scheme path tags and tagging jobs create their concepts in (made on first use).
    is_default   boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by   text
);
CREATE UNIQUE INDEX concept_scheme_one_default ON concept_scheme (is_default) WHERE is_default;

CREATE TABLE concept (
    id           uuid PRIMARY KEY,
    scheme_id    uuid NOT NULL REFERENCES concept_scheme (id) ON DELETE CASCADE,
    uri          text UNIQUE,
    notation     text,
    status       text NOT NULL DEFAULT 'candidate'
                 CHECK (status IN ('candidate', 'controlled', 'deprecated')),
    -- what kind of subject it names, for tagging and related-concept inference
    dimension    text CHECK (dimension IN ('domain', 'topic', 'methodology', 'application',
                                           'technique', 'content_type')),
    definition   text,
    scope_note   text,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by   text
);
CREATE INDEX concept_scheme_idx ON concept (scheme_id);

-- Labels: one preferred label per language, any number of alternative and hidden ones.
-- ``key`` is the label folded for case-insensitive matching.
CREATE TABLE concept_label (
    concept_id  uuid NOT NULL REFERENCES concept (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('pref', 'alt', 'hidden')),
    lang        text NOT NULL DEFAULT '',
    label       text NOT NULL CHECK (char_length(label) BETWEEN 1 AND 200),
    key         text GENERATED ALWAYS AS (lower(label)) STORED,
    PRIMARY KEY (concept_id, kind, lang, key)
);
CREATE UNIQUE INDEX concept_label_one_pref ON concept_label (concept_id, lang) WHERE kind = 'pref';
CREATE INDEX concept_label_key_idx ON concept_label (key);

-- Semantic relations. ``broader`` is stored once (narrower is the same row read the other
-- way, so the inverses cannot disagree); ``related`` is stored in both directions.
CREATE TABLE concept_relation (
    source_id   uuid NOT NULL REFERENCES concept (id) ON DELETE CASCADE,
    target_id   uuid NOT NULL REFERENCES concept (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('broader', 'related')),
    confidence  real CHECK (confidence BETWEEN 0 AND 1),
    created_by  text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (source_id, kind, target_id),
    CHECK (source_id <> target_id)
);
CREATE INDEX concept_relation_target_idx ON concept_relation (target_id, kind);

CREATE TABLE concept_collection (
    id          uuid PRIMARY KEY,
    scheme_id   uuid NOT NULL REFERENCES concept_scheme (id) ON DELETE CASCADE,
    uri         text UNIQUE,
    label       text NOT NULL CHECK (char_length(label) BETWEEN 1 AND 200),
    ordered     boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE concept_collection_member (
    collection_id  uuid NOT NULL REFERENCES concept_collection (id) ON DELETE CASCADE,
    concept_id     uuid NOT NULL REFERENCES concept (id) ON DELETE CASCADE,
    position       integer NOT NULL CHECK (position >= 0),
    PRIMARY KEY (collection_id, concept_id)
);

-- Concepts beside a note: never part of its versions, so tagging never makes a version
-- nor re-triggers embedding by itself. At most one primary concept per note.
CREATE TABLE note_concept (
    note_id     uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    concept_id  uuid NOT NULL REFERENCES concept (id) ON DELETE CASCADE,
    source      text NOT NULL CHECK (source IN ('user', 'api', 'ai_auto', 'import')),
    confidence  real NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    relevance   real NOT NULL DEFAULT 1.0 CHECK (relevance BETWEEN 0 AND 1),
    is_primary  boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by  text,
    PRIMARY KEY (note_id, concept_id)
);
CREATE INDEX note_concept_concept_idx ON note_concept (concept_id);
CREATE UNIQUE INDEX note_concept_one_primary ON note_concept (note_id) WHERE is_primary;
