-- The traversal segment (fortemi/graph/traversal/segment.py): each API process keeps a
-- memory's traversable links and its notes' read-scope columns in RAM as of one snapshot,
-- and a query checks, in its own snapshot, that no transaction that snapshot did not see
-- has changed what the walk reads. Every such change leaves a row here naming the
-- transaction that made it: a statement that inserts, updates or deletes links (a cascade
-- from a purged note included), and a note whose deleted_at, project or skill changes.
-- A statement that touches no row, and a note edit that leaves those three alone, leave
-- nothing, so saving a note without links does not age any segment.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.

-- "at" bounds how long a row is kept: segments older than the retention are rebuilt,
-- never read (fortemi/graph/traversal/segments.py prunes older rows).
CREATE TABLE graph_change (
    xid  xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX graph_change_xid_idx ON graph_change (xid);

-- Each link trigger names its transition table "changed" (the rows inserted, the new
-- versions of the rows updated, the rows deleted); PostgreSQL allows a transition table
-- only on a trigger of one event, hence three triggers, one statement-level row each.
CREATE FUNCTION graph_links_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed) THEN
        INSERT INTO graph_change DEFAULT VALUES;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER note_link_inserted AFTER INSERT ON note_link
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION graph_links_changed();
CREATE TRIGGER note_link_updated AFTER UPDATE ON note_link
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION graph_links_changed();
CREATE TRIGGER note_link_deleted AFTER DELETE ON note_link
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
    EXECUTE FUNCTION graph_links_changed();

CREATE FUNCTION graph_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO graph_change DEFAULT VALUES;
    RETURN NULL;
END
$$;

CREATE TRIGGER note_link_truncated AFTER TRUNCATE ON note_link
    FOR EACH STATEMENT EXECUTE FUNCTION graph_changed();

-- A note's readability: whether it is live, and its project and skill (the read scope).
CREATE TRIGGER note_scope_changed AFTER UPDATE OF deleted_at, project, skill ON note
    FOR EACH ROW
    WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at
          OR OLD.project IS DISTINCT FROM NEW.project
          OR OLD.skill IS DISTINCT FROM NEW.skill)
    EXECUTE FUNCTION graph_changed();
