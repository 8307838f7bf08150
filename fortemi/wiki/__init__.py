"""Wikis: vaults of ``[[wiki-linked]]`` markdown synced into a memory, and what reads them."""
