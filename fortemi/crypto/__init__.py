"""End-to-end encryption: the MMPKE01 envelope format, its addresses and key files.

The format is published in the README ("Encryption (MMPKE01)") with test vectors in
``tests/data/pke``. Modules: :mod:`.addresses` (``mm:`` addresses), :mod:`.keys` (X25519
keypairs, key files), :mod:`.header` (the preamble), :mod:`.envelope` (sealing and opening
in bounded memory), :mod:`.service` (what the server offers: sealing for addresses, never
holding a private key), :mod:`.commands` (``fortemi pke``).
"""
