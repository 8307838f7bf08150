"""The tamper-evident audit log of authorization decisions."""
