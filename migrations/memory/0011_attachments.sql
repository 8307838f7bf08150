-- Attachments: files kept with a note. Their bytes live in a blob store (local disk or
-- S3), addressed by the BLAKE3 digest of their content, so the same file attached twice in
-- a memory is stored once. A blob is referenced while any attachment row names it; the
-- foreign key keeps a referenced blob's row, and the sweep removes the rows (and bytes) no
-- attachment names any more.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.

CREATE TABLE blob (
    digest      text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    size        bigint NOT NULL CHECK (size >= 0),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE attachment (
    id                    uuid PRIMARY KEY,
    note_id               uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    blob_digest           text NOT NULL REFERENCES blob (digest),
    filename              text NOT NULL CHECK (char_length(filename) BETWEEN 1 AND 255),
    size                  bigint NOT NULL CHECK (size >= 0),
    mime_declared         text,
    mime_detected         text NOT NULL,
    document_type         text NOT NULL,
    detection_method      text NOT NULL,
    detection_confidence  real NOT NULL CHECK (detection_confidence BETWEEN 0 AND 1),
    extraction_status     text NOT NULL DEFAULT 'pending'
        CHECK (extraction_status IN ('pending', 'done', 'skipped', 'failed')),
    extraction_reason     text,
    extraction_metadata   jsonb NOT NULL DEFAULT '{}'::jsonb
        CHECK (jsonb_typeof(extraction_metadata) = 'object'),
    preview               text,
    extracted_text        text,
    -- An e-mail's attachments are attachments of the same note, naming the message.
    extracted_from        uuid REFERENCES attachment (id) ON DELETE CASCADE,
    created_by            text,
    created_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    extracted_at          timestamptz,
    deleted_at            timestamptz
);
CREATE INDEX attachment_note_idx ON attachment (note_id, created_at, id);
CREATE INDEX attachment_blob_idx ON attachment (blob_digest);
CREATE INDEX attachment_parent_idx ON attachment (extracted_from) WHERE extracted_from IS NOT NULL;

-- An attachment's extracted text cut as its detected type deserves (offsets into the text).
CREATE TABLE attachment_chunk (
    attachment_id  uuid NOT NULL REFERENCES attachment (id) ON DELETE CASCADE,
    ordinal        integer NOT NULL CHECK (ordinal >= 0),
    text           text NOT NULL,
    start_offset   integer NOT NULL,
    end_offset     integer NOT NULL,
    heading        text,
    lex            tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    PRIMARY KEY (attachment_id, ordinal)
);

-- A note is found by its attachments' text: what extraction read joins the note's lexical
-- index through this derived column, which is not part of the note's content, so it never
-- makes a version. The generated lex column is made again to include it (PostgreSQL 16
-- cannot change a generated expression in place); existing rows get the same tsvector, so
-- their postings stay exact. Attachment text is bounded like content, which keeps any
-- note's tsvector below PostgreSQL's 1 MB limit.
ALTER TABLE note ADD COLUMN attachment_text text NOT NULL DEFAULT '';
DROP TRIGGER note_lex_update ON note;
ALTER TABLE note DROP COLUMN lex;
ALTER TABLE note ADD COLUMN lex tsvector GENERATED ALWAYS AS (
    to_tsvector(
        'english'::regconfig,
        note_search_text(title, content, tags) || ' ' || left(attachment_text, 262144)
    )
) STORED;
CREATE INDEX note_lex_idx ON note USING gin (lex);
CREATE TRIGGER note_lex_update AFTER UPDATE OF title, content, tags, deleted_at, attachment_text
    ON note FOR EACH ROW
    WHEN (OLD.lex IS DISTINCT FROM NEW.lex OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION index_note_lexemes();

-- The note's attachment text is the text of its attachments whose extraction is done, in
-- the order they were attached; kept exact by the writes that change it.
CREATE FUNCTION refresh_note_attachment_text() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    target uuid;
BEGIN
    target := CASE WHEN TG_OP = 'DELETE' THEN OLD.note_id ELSE NEW.note_id END;
    UPDATE note SET attachment_text = coalesce((
        SELECT string_agg(a.extracted_text, E'\n\n' ORDER BY a.created_at, a.id)
        FROM attachment a
        WHERE a.note_id = target AND a.extraction_status = 'done' AND a.extracted_text <> ''
    ), '')
    WHERE id = target;
    RETURN NULL;
END
$$;
CREATE TRIGGER attachment_text_insert AFTER INSERT ON attachment
    FOR EACH ROW WHEN (NEW.extraction_status = 'done')
    EXECUTE FUNCTION refresh_note_attachment_text();
CREATE TRIGGER attachment_text_update AFTER UPDATE OF extracted_text, extraction_status
    ON attachment FOR EACH ROW EXECUTE FUNCTION refresh_note_attachment_text();
CREATE TRIGGER attachment_text_delete AFTER DELETE ON attachment
    FOR EACH ROW EXECUTE FUNCTION refresh_note_attachment_text();

-- Deleting a note soft-deletes its attachments with the same timestamp; restoring the note
-- brings back those deleted with it (an attachment is removed alone only for good).
CREATE FUNCTION note_attachments_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.deleted_at IS NOT NULL THEN
        UPDATE attachment SET deleted_at = NEW.deleted_at
        WHERE note_id = NEW.id AND deleted_at IS NULL;
    ELSE
        UPDATE attachment SET deleted_at = NULL
        WHERE note_id = NEW.id AND deleted_at = OLD.deleted_at;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER note_attachments_deleted AFTER UPDATE OF deleted_at ON note
    FOR EACH ROW WHEN ((OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION note_attachments_follow();
