-- Each term's postings in impact order, for the pruned lexical leg (fortemi/retrieval/
-- pruning.py): by (dl + 20) / tf, from which the most a posting past a point can add to
-- BM25 follows for any corpus statistics, so nothing stored here goes stale as notes come
-- and go. note_id makes the order total; tf and dl ride along for index-only scans.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.
CREATE INDEX lex_posting_impact_idx ON lex_posting (lexeme, ((dl + 20)::float8 / tf), note_id)
    INCLUDE (tf, dl);
