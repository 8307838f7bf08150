"""Documents: document types and their detection, syntactic chunking (extraction,
attachments and shards build on these)."""
