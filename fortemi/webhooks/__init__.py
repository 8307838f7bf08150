"""Signed webhooks: signatures, the SSRF guard for targets, and one delivery attempt."""
