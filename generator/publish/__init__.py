"""Publish: what a published site says about itself, and checking it.

Owns SHA256SUMS, the mirror's own signing key and signature, comparing two
mirrors, and fetching a file from a server no one vouches for.

May import: `generator.trust`, `generator.site`.
"""
