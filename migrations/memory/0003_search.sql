-- Search: the lexical index BM25 ranks from, and chunks with their embeddings.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.

-- What full-text search sees of a note: its title, the first 256 KiB of its content (which
-- keeps any note's tsvector far below PostgreSQL's 1 MB limit) and its tags, with English
-- stemming and stop words. The GIN index serves phrases and exclusions.
-- (array_to_string is only STABLE in general; for text[] it is immutable, so it is wrapped.)
CREATE FUNCTION note_search_text(title text, content text, tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN title || ' ' || left(content, 262144) || ' ' || array_to_string(tags, ' ');
ALTER TABLE note ADD COLUMN lex tsvector GENERATED ALWAYS AS (
    to_tsvector('english'::regconfig, note_search_text(title, content, tags))
) STORED;
CREATE INDEX note_lex_idx ON note USING gin (lex);

-- The inverted index: one row per (lexeme, live note) with the term's frequency in the note
-- and the note's length in tokens, so BM25's saturation and length normalisation come from
-- an index-only scan of the query's terms. Document frequencies are counted from the same
-- rows at query time, so writers never contend for shared counters.
CREATE TABLE lex_posting (
    lexeme   text COLLATE "C" NOT NULL,
    note_id  uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    tf       integer NOT NULL CHECK (tf >= 1),
    dl       integer NOT NULL CHECK (dl >= 1),
    PRIMARY KEY (lexeme, note_id) INCLUDE (tf, dl)
);
CREATE INDEX lex_posting_note_idx ON lex_posting (note_id);

-- One row per live, non-empty note: the corpus size and average length BM25 needs.
CREATE TABLE lex_doc (
    note_id  uuid PRIMARY KEY REFERENCES note (id) ON DELETE CASCADE,
    dl       integer NOT NULL CHECK (dl >= 1)
);

-- Every lexeme ever indexed (never removed: a stale one only costs a prefix expansion that
-- matches nothing). "C" collation, so a prefix is a btree range. Rows are added with
-- ON CONFLICT DO NOTHING, which takes no lock on an existing row.
CREATE TABLE lex_term (
    lexeme  text COLLATE "C" PRIMARY KEY
);

CREATE FUNCTION index_note_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total integer;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM lex_posting WHERE note_id = NEW.id;
        DELETE FROM lex_doc WHERE note_id = NEW.id;
    END IF;
    IF NEW.deleted_at IS NULL AND length(NEW.lex) > 0 THEN
        SELECT sum(coalesce(array_length(t.positions, 1), 1)) INTO total FROM unnest(NEW.lex) AS t;
        INSERT INTO lex_posting (lexeme, note_id, tf, dl)
        SELECT t.lexeme, NEW.id, coalesce(array_length(t.positions, 1), 1), total
        FROM unnest(NEW.lex) AS t;
        INSERT INTO lex_doc (note_id, dl) VALUES (NEW.id, total);
        INSERT INTO lex_term (lexeme)
        SELECT t.lexeme FROM unnest(NEW.lex) AS t ORDER BY 1
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER note_lex_insert AFTER INSERT ON note
    FOR EACH ROW EXECUTE FUNCTION index_note_lexemes();
CREATE TRIGGER note_lex_update AFTER UPDATE OF title, content, tags, deleted_at ON note
    FOR EACH ROW
    WHEN (OLD.lex IS DISTINCT FROM NEW.lex OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION index_note_lexemes();

-- Notes written before this migration.
INSERT INTO lex_doc (note_id, dl)
SELECT n.id, sum(coalesce(array_length(t.positions, 1), 1))
FROM note n, unnest(n.lex) AS t
WHERE n.deleted_at IS NULL
GROUP BY n.id;
INSERT INTO lex_posting (lexeme, note_id, tf, dl)
SELECT t.lexeme, n.id, coalesce(array_length(t.positions, 1), 1), d.dl
FROM note n JOIN lex_doc d ON d.note_id = n.id, unnest(n.lex) AS t;
INSERT INTO lex_term (lexeme)
SELECT DISTINCT lexeme FROM lex_posting ON CONFLICT DO NOTHING;

-- Embedding sets: a model, its dimension and how a note becomes the text it embeds. Two
-- models or compositions coexist as two sets; a query embeds with the set it searches.
CREATE TABLE embedding_set (
    id           integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (char_length(name) BETWEEN 1 AND 200),
    model        text NOT NULL,
    dimension    integer NOT NULL CHECK (dimension BETWEEN 1 AND 2000),
    composition  jsonb NOT NULL CHECK (jsonb_typeof(composition) = 'object'),
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A note's content cut into pieces a model can embed; offsets into the content.
CREATE TABLE chunk (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    note_id       uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    ordinal       integer NOT NULL CHECK (ordinal >= 0),
    text          text NOT NULL,
    start_offset  integer NOT NULL,
    end_offset    integer NOT NULL,
    heading       text,
    content_hash  text NOT NULL,  -- of the note content the chunk was cut from
    UNIQUE (note_id, ordinal)
);

-- One vector per (set, chunk). The column has no fixed dimension (sets differ); each set
-- gets a partial HNSW index on a cast to its dimension, made when the set is created.
-- STORAGE PLAIN keeps vectors in line: TOASTed vectors made exact scans 4-5x slower.
CREATE TABLE chunk_embedding (
    set_id     integer NOT NULL REFERENCES embedding_set (id) ON DELETE CASCADE,
    chunk_id   bigint NOT NULL REFERENCES chunk (id) ON DELETE CASCADE,
    note_id    uuid NOT NULL,  -- the chunk's note: best chunk per note without a join
    text_hash  text NOT NULL,  -- of the composed text embedded: unchanged text is not redone
    embedding  vector NOT NULL,
    PRIMARY KEY (set_id, chunk_id)
);
ALTER TABLE chunk_embedding ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE INDEX chunk_embedding_note_idx ON chunk_embedding (set_id, note_id);
