-- Each chunk's words as PostgreSQL's English configuration analyses them, stored with the
-- chunk. Wiki retrieval plans score every chunk of the notes a question is routed to;
-- analysing their text per question cost about 0.4 ms per 1,000-character chunk (130 ms
-- for the 300 chunks of 20 long notes), once per chunk write instead.
-- Runs with search_path set to the memory's schema (then public); never name a schema here.
ALTER TABLE chunk ADD COLUMN lex tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED;
