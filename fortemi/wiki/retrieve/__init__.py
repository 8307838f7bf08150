"""A question's retrieval plan inside a wiki vault: access, scope, TF-IDF routing,
semantic re-rank, skills, selection under a token budget, and a prompt layout ordered for
the model's prefix cache (:class:`~fortemi.wiki.retrieve.service.RetrievalPlanner`)."""
