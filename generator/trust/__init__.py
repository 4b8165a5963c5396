"""Trust: bytes in, verified documents out.

Owns everything that decides whether a document is exactly what the resolver
signed: reading files no one vouches for, the canonical JSON, strict decoding,
shape checks, the pinned keys, signature and hash verification, the
deterministic merge, and choosing among several documents for one number.

May import: nothing else of the package. Everything above depends on it, so it
stays free of pages, builds and commands.
"""
