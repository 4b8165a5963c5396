"""One file in, one verdict out: stages 1-3 for a single document.

This is the unit of work that `verify`, the build's worker processes and the
build cache share, so that every path to "trusted" is the same code.
"""

from __future__ import annotations

from pathlib import Path

from .errors import RejectionError
from .keys import Keyring
from .load import Limits, SourceDocument, decode_document, read_bytes
from .model import Verdict, Verified
from .verify import verify_document


def verify_file(
    path: Path, file: str, content: Path, keyring: Keyring, limits: Limits
) -> tuple[Verdict, Verified | None, SourceDocument | None]:
    """Load, decode, parse and verify one file; bad content never raises."""
    try:
        raw = read_bytes(path, content, limits)
    except RejectionError as exc:
        return Verdict(file, None, None, (exc.problem,)), None, None
    return verify_bytes(raw, file, keyring, limits)


def verify_bytes(
    raw: bytes, file: str, keyring: Keyring, limits: Limits
) -> tuple[Verdict, Verified | None, SourceDocument | None]:
    """Decode, parse and verify one document's bytes, read from a file or an object
    store; bad content never raises."""
    try:
        source = decode_document(raw, file, limits)  # bytes -> decoded JSON
    except RejectionError as exc:
        return Verdict(file, None, None, (exc.problem,)), None, None
    verdict, verified = verify_document(source, keyring)  # parse, then hashes, signatures, merge
    return verdict, verified, source
