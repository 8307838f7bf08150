-- Public keys users publish so the server can encrypt for their mm: addresses
-- (fortemi.crypto.directory). Only public keys: a private key never reaches the server.
-- An address is BLAKE3 of its key, so one address names one key; a key belongs to the
-- principal who published it, and a revoked key is kept (who held it stays answerable)
-- but no longer found for encryption.

CREATE TABLE public.public_key (
    address     text PRIMARY KEY CHECK (address ~ '^mm:[1-9A-HJ-NP-Za-km-z]{30,40}$'),
    public_key  bytea NOT NULL UNIQUE CHECK (octet_length(public_key) = 32),
    owner       text NOT NULL CHECK (char_length(owner) BETWEEN 1 AND 512),
    label       text CHECK (char_length(label) <= 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE INDEX public_key_by_owner ON public.public_key (owner, created_at, address);
