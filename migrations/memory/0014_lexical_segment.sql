-- The lexical segment (fortemi/retrieval/segment.py): each API process keeps a memory's
-- postings in RAM as of one snapshot and reads from here, in the query's own snapshot,
-- only what changed since. Every lex_doc row names the transaction that wrote it, and
-- every row removed from lex_doc (update, soft delete, purge, cascade) leaves a
-- tombstone naming the transaction that removed it. A transaction the segment's snapshot
-- does not see has an id at or above that snapshot's xmin, so "xid >= xmin" on both
-- tables is every note whose postings the segment may hold wrong.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.

ALTER TABLE lex_doc ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX lex_doc_xid_idx ON lex_doc (xid);

-- "at" bounds how long a tombstone is kept: segments older than the retention are
-- rebuilt, never read (fortemi/retrieval/segments.py prunes older tombstones).
CREATE TABLE lex_gone (
    note_id  uuid NOT NULL,
    xid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX lex_gone_xid_idx ON lex_gone (xid);

-- One statement-level trigger: a bulk delete writes its tombstones in one insert.
CREATE FUNCTION lex_doc_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lex_gone (note_id) SELECT note_id FROM gone;
    RETURN NULL;
END
$$;

CREATE TRIGGER lex_doc_gone AFTER DELETE ON lex_doc
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION lex_doc_gone();
