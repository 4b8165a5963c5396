"""One file in, one verdict out: stages 1-3 for a single document.

This is the unit of work that `verify`, the build's worker processes and the
build cache share, so that every path to "trusted" is the same code.
"""

from __future__ import annotations

from pathlib import Path

from .errors import RejectionError
from .keys import Keyring
from .load import Limits, SourceDocument, load_document
from .model import Verdict, Verified
from .parse import parse
from .verify import verify_parsed


def verify_file(
    path: Path, file: str, content: Path, keyring: Keyring, limits: Limits
) -> tuple[Verdict, Verified | None, SourceDocument | None]:
    """Load, decode, parse and verify one file; bad content never raises."""
    try:
        source = load_document(path, file, content, limits)  # bytes -> decoded JSON
    except RejectionError as exc:
        return Verdict(file, None, None, (exc.problem,)), None, None
    doc, problems = parse(source)  # JSON -> a typed document, or what is wrong with its shape
    verdict, verified = verify_parsed(source, doc, problems, keyring)  # hashes, signatures, merge
    return verdict, verified, source
