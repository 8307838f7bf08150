-- A memory's custom document types (fortemi.documents): each a definition validated by
-- the same schema as the shipped types.yaml, kept whole as JSON (the registry, not SQL,
-- reads its fields), with its name and category as columns to look up and filter by.
-- System types are data in the package, never rows here.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.
CREATE TABLE document_type (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.+-]{0,63}$'),
    category    text NOT NULL
        CHECK (category IN ('code', 'prose', 'data', 'tabular', 'multimedia', 'documents')),
    definition  jsonb NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
