-- Webhooks (fortemi/webhooks): a memory's subscriptions of an HTTP endpoint to its events.
-- A delivery is one event for one webhook, written once (UNIQUE (webhook, event)) however
-- often the fan-out sees the event, and carried out by a WebhookDelivery job; each POST it
-- makes is an attempt row. The signing secret is stored encrypted (AES-GCM, the webhook id
-- as associated data), never in clear.

CREATE TABLE public.webhook (
    id                 uuid PRIMARY KEY,
    -- ON DELETE CASCADE: a deleted memory's hooks go with it, and a memory re-created under
    -- an old name must not inherit them.
    memory             text NOT NULL REFERENCES public.memory (name) ON DELETE CASCADE,
    url                text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    -- Exact types ("note.created"), families ("note.*"), or everything ("*").
    event_types        text[] NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 50),
    description        text CHECK (char_length(description) <= 500),
    secret_ciphertext  bytea NOT NULL,
    created_by         text NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_memory ON public.webhook (memory);

CREATE TABLE public.webhook_delivery (
    id          uuid PRIMARY KEY,
    webhook_id  uuid NOT NULL REFERENCES public.webhook (id) ON DELETE CASCADE,
    event_id    text NOT NULL,
    event_type  text NOT NULL,
    -- The exact bytes POSTed on every attempt (the signature covers timestamp + body).
    body        bytea NOT NULL,
    job_id      uuid,
    status      text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'delivered', 'failed')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    UNIQUE (webhook_id, event_id)
);

-- Newest first per webhook: the deliveries list's order and keyset.
CREATE INDEX webhook_delivery_by_webhook
    ON public.webhook_delivery (webhook_id, created_at DESC, id DESC);

CREATE TABLE public.webhook_attempt (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id       uuid NOT NULL REFERENCES public.webhook_delivery (id) ON DELETE CASCADE,
    attempt           integer NOT NULL CHECK (attempt >= 1),
    at                timestamptz NOT NULL DEFAULT now(),
    outcome           text NOT NULL CHECK (outcome IN ('delivered', 'retry', 'failed')),
    status_code       integer,
    failure_class     text,
    code              text,
    duration_ms       double precision NOT NULL,
    response_excerpt  text NOT NULL DEFAULT ''
);

CREATE INDEX webhook_attempt_by_delivery ON public.webhook_attempt (delivery_id, attempt);
