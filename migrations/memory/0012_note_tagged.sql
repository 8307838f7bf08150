-- Which version of each note the ConceptTagging chain last finished on (fortemi.graph):
-- what the graph's backfill sweep reads to find notes that never got, or lost, their
-- tagging. A note's concepts are not that record: a chain may find nothing, and a person's
-- concepts say nothing about the job. Linking needs no such table: the Linking job writes
-- the note's vector (note_embedding) in the set it linked in.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.
CREATE TABLE note_tagged (
    note_id    uuid PRIMARY KEY REFERENCES note (id) ON DELETE CASCADE,
    version    integer NOT NULL CHECK (version >= 1),
    tagged_at  timestamptz NOT NULL DEFAULT now()
);

-- Notes a chain tagged before this table: their ai_auto concepts are its mark.
INSERT INTO note_tagged (note_id, version)
SELECT n.id, n.version FROM note n
WHERE EXISTS (SELECT 1 FROM note_concept c WHERE c.note_id = n.id AND c.source = 'ai_auto');
