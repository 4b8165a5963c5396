"""Publish: what a published site says about itself, checking it, and putting it somewhere.

Owns SHA256SUMS, the mirror's own signing key and signature, comparing two
mirrors, fetching a file from a server no one vouches for, and storage: where a
site is written and read (a folder or an object store behind one small
interface, `storage`, with leases that keep two writers apart), and uploading a
built site to it in publication order (`upload`).

May import: `generator.trust`, `generator.site`.
"""
