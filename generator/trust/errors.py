"""Every way a document can be refused, and every operational failure.

Rules:
- A refusal is data (`Rejection`): the file, an RFC 6901 JSON pointer, a stable
  dotted code and a sentence for a person. Stages collect them; only the CLI
  formats them and chooses exit codes.
- The codes below are the public contract: tests, reports and users match on
  them, so a code is never renamed, only added.
- `BuildError` and `ConfigError` are operational (I/O, templates, settings),
  never about the content of a signed document.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Code(StrEnum):
    """Stable rejection codes. The value is the code; the docstring table in
    README.md is generated from `CODE_HELP`."""

    # (1) size cap and reading
    FILE_TOO_LARGE = "file.too_large"
    FILE_UNREADABLE = "file.unreadable"
    FILE_OUTSIDE_CONTENT = "file.outside_content"
    # (2) strict decoding
    JSON_INVALID_UTF8 = "json.invalid_utf8"
    JSON_BOM = "json.bom"
    JSON_INVALID = "json.invalid"
    JSON_TRAILING_DATA = "json.trailing_data"
    JSON_DUPLICATE_KEY = "json.duplicate_key"
    JSON_NON_FINITE = "json.non_finite"
    JSON_TOO_DEEP = "json.too_deep"
    JSON_NOT_OBJECT = "json.not_object"
    DOC_UNKNOWN_KIND = "doc.unknown_kind"
    DOC_MORE_PROBLEMS = "doc.more_problems"
    # (3) shape
    SCHEMA_MISSING_FIELD = "schema.missing_field"
    SCHEMA_WRONG_TYPE = "schema.wrong_type"
    SCHEMA_BAD_VALUE = "schema.bad_value"
    # (4) recomputed hashes and derived identifiers
    PITH_BAD_FORMAT = "pith.bad_format"
    PITH_MISMATCH = "pith.mismatch"
    PITH_YEAR_MISMATCH = "pith.year_mismatch"
    PITH_SHORT_MISMATCH = "pith.short_mismatch"
    ALIAS_MISMATCH = "alias.mismatch"
    RECORD_HASH_MISMATCH = "record.hash_mismatch"
    RECORD_SOURCE_MISMATCH = "record.source_mismatch"
    TITLE_MISMATCH = "title.mismatch"
    RECEIPT_HASH_MISMATCH = "receipt.hash_mismatch"
    EVENT_HASH_MISMATCH = "event.hash_mismatch"
    EVENT_ID_MISMATCH = "event.id_mismatch"
    EVENT_WRONG_SUBJECT = "event.wrong_subject"
    EVENT_PAYLOAD_MISMATCH = "event.payload_mismatch"
    EVENT_UNKNOWN_TYPE = "event.unknown_type"
    EVENT_DUPLICATE = "event.duplicate"
    EVENT_NO_RECORD_CREATED = "event.no_record_created"
    STATE_MISMATCH = "state.mismatch"
    STATE_HASH_MISMATCH = "state.hash_mismatch"
    BUNDLE_HASH_MISMATCH = "bundle.hash_mismatch"
    # (5) keys
    KEY_NOT_PINNED = "key.not_pinned"
    KEY_UNKNOWN = "key.unknown"
    KEY_FINGERPRINT_MISMATCH = "key.fingerprint_mismatch"
    KEY_BAD_ALGORITHM = "key.bad_algorithm"
    # (6) signatures
    SIGNATURE_MALFORMED = "signature.malformed"
    RECEIPT_BAD_SIGNATURE = "receipt.bad_signature"
    EVENT_BAD_SIGNATURE = "event.bad_signature"
    BUNDLE_BAD_SIGNATURE = "bundle.bad_signature"
    # (8) across documents and builds
    BUNDLE_CONFLICT = "bundle.conflict"
    BUNDLE_ROLLBACK = "bundle.rollback"
    RECORD_CONFLICT = "record.conflict"
    RECORD_SIGNATURE_CHANGED = "record.signature_changed"
    # (pull) fetching from a resolver or a mirror
    FETCH_FAILED = "fetch.failed"
    FETCH_TOO_SLOW = "fetch.too_slow"
    FETCH_NOT_FOUND = "fetch.not_found"
    FETCH_REDIRECT_REFUSED = "fetch.redirect_refused"
    PULL_WRONG_DOCUMENT = "pull.wrong_document"


CODE_HELP: dict[Code, str] = {
    Code.FILE_TOO_LARGE: "the file is larger than the configured size limit",
    Code.FILE_UNREADABLE: "the file could not be read",
    Code.FILE_OUTSIDE_CONTENT: "a symbolic link points outside the content folder",
    Code.JSON_INVALID_UTF8: "the bytes are not valid UTF-8",
    Code.JSON_BOM: "the file starts with a byte-order mark",
    Code.JSON_INVALID: "the text is not valid JSON",
    Code.JSON_TRAILING_DATA: "there is data after the JSON value",
    Code.JSON_DUPLICATE_KEY: "an object repeats a key, so it has no single canonical form",
    Code.JSON_NON_FINITE: "NaN or Infinity appears; canonical JSON has no such numbers",
    Code.JSON_TOO_DEEP: "arrays and objects nest deeper than the documented bound",
    Code.JSON_NOT_OBJECT: "the top level is not a JSON object",
    Code.DOC_UNKNOWN_KIND: "neither a Pith record nor a Pith bundle (record_type / bundle_type)",
    Code.DOC_MORE_PROBLEMS: "the document has more problems than are listed for one file",
    Code.SCHEMA_MISSING_FIELD: "a required field is missing",
    Code.SCHEMA_WRONG_TYPE: "a field has the wrong JSON type",
    Code.SCHEMA_BAD_VALUE: "a field has a value outside what the format allows",
    Code.PITH_BAD_FORMAT: "a Pith number is not of the form pith:YYYY:<26 base32 characters>",
    Code.PITH_MISMATCH: "the Pith number is not the one derived from the canonical hash",
    Code.PITH_YEAR_MISMATCH: "the Pith number's year is not the year of submitted_at",
    Code.PITH_SHORT_MISMATCH: "the short Pith number is not derived from the canonical hash",
    Code.ALIAS_MISMATCH: "an alias does not agree with the canonical record",
    Code.RECORD_HASH_MISMATCH: "canonical_sha256 is not the hash of the canonical record",
    Code.RECORD_SOURCE_MISMATCH: "the document's source disagrees with the signed canonical record",
    Code.TITLE_MISMATCH: "a displayed title does not match title_canon_sha256",
    Code.RECEIPT_HASH_MISMATCH: "the receipt names a different canonical hash",
    Code.EVENT_HASH_MISMATCH: "content_sha256 is not the hash of the event",
    Code.EVENT_ID_MISMATCH: "event_id is not sha256:<content_sha256>",
    Code.EVENT_WRONG_SUBJECT: "the event names another Pith number",
    Code.EVENT_PAYLOAD_MISMATCH: "a record_created payload disagrees with the bundle",
    Code.EVENT_UNKNOWN_TYPE: "an event type this mirror does not know how to merge",
    Code.EVENT_DUPLICATE: "the same event appears twice",
    Code.EVENT_NO_RECORD_CREATED: "the bundle has no record_created event",
    Code.STATE_MISMATCH: "the served state differs from the recomputed merge",
    Code.STATE_HASH_MISMATCH: "state_sha256 is not the hash of the served state",
    Code.BUNDLE_HASH_MISMATCH: "bundle_sha256 is not the hash of the bundle",
    Code.KEY_NOT_PINNED: "an embedded public key is not one of the pinned keys",
    Code.KEY_UNKNOWN: "a signature names a key id that is not pinned",
    Code.KEY_FINGERPRINT_MISMATCH: "a key fingerprint does not match the pinned key",
    Code.KEY_BAD_ALGORITHM: "a signature or key is not Ed25519",
    Code.SIGNATURE_MALFORMED: "a signature is not 64 bytes of standard base64",
    Code.RECEIPT_BAD_SIGNATURE: "the receipt signature does not verify with the pinned key",
    Code.EVENT_BAD_SIGNATURE: "an event signature does not verify with the pinned key",
    Code.BUNDLE_BAD_SIGNATURE: "the bundle signature does not verify with the pinned key",
    Code.BUNDLE_CONFLICT: "two bundles for one Pith number (or a bundle and the published one) disagree",
    Code.BUNDLE_ROLLBACK: "an older bundle would replace the published one (fewer events, or built earlier)",
    Code.RECORD_CONFLICT: "two different record documents for one Pith number",
    Code.RECORD_SIGNATURE_CHANGED: "a fetched record's signed receipt differs from the local copy's",
    Code.FETCH_FAILED: "the document could not be fetched (no answer, an HTTP error, not valid HTTP)",
    Code.FETCH_TOO_SLOW: "the whole answer did not arrive within the time limit",
    Code.FETCH_NOT_FOUND: "the source has no document for this Pith number or look-up",
    Code.FETCH_REDIRECT_REFUSED: "the answer redirects where pull does not follow (another scheme, a loop)",
    Code.PULL_WRONG_DOCUMENT: "the answer verifies but is not the document asked for",
}


def pointer(*parts: str | int) -> str:
    """RFC 6901 JSON pointer for a path of keys and indexes ('' is the whole document)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a document is not trusted, before it is tied to a file."""

    code: Code
    pointer: str
    message: str


MAX_PROBLEMS = 100
"""The most problems listed for one document. A few megabytes of `{}` events
would otherwise give millions, each in memory, in the report and on the
terminal; one is enough to refuse the document."""


class Problems(list[Problem]):
    """A document's problems: the first MAX_PROBLEMS, and how many in all."""

    def __init__(self) -> None:
        super().__init__()
        self.found = 0
        """How many problems were found, listed or not (checks compare it before and after)."""

    def append(self, problem: Problem) -> None:
        self.found += 1
        if len(self) < MAX_PROBLEMS:
            super().append(problem)

    def listed(self) -> tuple[Problem, ...]:
        """Every problem kept, and one saying how many more there were."""
        more = self.found - len(self)
        if more <= 0:
            return tuple(self)
        said = f"and {more:,} more problem(s) in this document, not listed"
        return (*self, Problem(Code.DOC_MORE_PROBLEMS, "", said))


@dataclass(frozen=True, slots=True, order=True)
class Rejection:
    """A refused document: where (file, pointer), what (code) and why (message)."""

    file: str
    pointer: str
    code: Code
    message: str

    def line(self) -> str:
        """`file: pointer: code: message`, the pointer left out when it is the whole
        document: "" shown as "/" would read as the pointer to a member named ""."""
        where = f"{self.pointer}: " if self.pointer else ""
        return printable(f"{self.file}: {where}{self.code.value}: {self.message}")

    def as_json(self) -> dict[str, str]:
        return {"code": self.code.value, "pointer": self.pointer, "message": self.message}


_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
"""Control characters as `\\xNN`: a file name or a document's key may hold a newline
(which would print a second, made-up report line) or an escape sequence (which a
terminal would obey)."""


def printable(text: str) -> str:
    """`text` with its control characters written as `\\xNN`, for one line of a report."""
    return text.translate(_CONTROLS)


def shown_line(text: str) -> str:
    """`text` as one line of a report: control characters as `\\xNN` (`printable`), and
    bytes of a file name that are not UTF-8 (lone surrogates) as `\\xNN` too, so that a
    name or a key id read from a site cannot write over the lines around it."""
    text = text.translate(_CONTROLS)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # (a surrogate no file name holds)
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class RejectionError(Exception):
    """Raised where one problem makes the rest of a document unreadable."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.pointer}: {problem.code.value}: {problem.message}")
        self.problem = problem


class BuildError(Exception):
    """An operational failure: I/O, a template, a path collision."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[type[BuildError], tuple[str, str]]:
        # Raised in worker processes: must survive pickling back to the parent.
        return (BuildError, (self.path, self.reason))

    @classmethod
    def from_os_error(cls, exc: OSError, where: str) -> BuildError:
        """An operational failure (a full disk, an unreadable file) in one line,
        naming the file when the error does, else `where`."""
        path = exc.filename if isinstance(exc.filename, str) else where
        return cls(path, str(exc.strerror or exc))


class SiteBusy(BuildError):
    """Another build holds SITE's lock: `build` refuses; a rebuild under watch waits."""


REMOVAL_SHARE = 0.10
"""The largest share of the published records a build (or a full upload) may take down
without `allow_removals` (see build/removal_guard.py)."""
NAMED_NUMBERS = 5
"""How many of the numbers such a refusal names; the rest are counted."""


class RemovalsRefused(BuildError):
    """A build or an upload would unpublish more of the mirror than it may without
    `allow_removals`, or roll a record back: nothing was changed."""

    def __reduce__(self) -> tuple[type[RemovalsRefused], tuple[str, str]]:
        return (RemovalsRefused, (self.path, self.reason))


def too_many_removals(dropped: int, published: int, none_left: bool) -> bool:
    """Whether taking down `dropped` of `published` records needs `allow_removals`: all of
    them gone (an empty content folder, an empty site), or more than `REMOVAL_SHARE`."""
    return dropped > 0 and (none_left or dropped / published > REMOVAL_SHARE)


def named_numbers(numbers: list[str]) -> str:
    """The first `NAMED_NUMBERS` of `numbers`, and how many more."""
    more = len(numbers) - NAMED_NUMBERS
    return ", ".join(numbers[:NAMED_NUMBERS]) + (f" and {more:,} more" if more > 0 else "")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM, raised in the main thread so that a command stops
    as Ctrl-C stops it: workers ended, temporary files removed, SITE whole. A build
    it stops notes whether its publication was complete (`published`) and where."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.published: bool | None = None
        self.site: str | None = None
        self.finished = False
        """Whether the build had ended, its cache saved, when the signal came."""


class ConfigError(Exception):
    """A setting or keys file that cannot be used; names the setting."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str, str]]:
        return (ConfigError, (self.key, self.reason))
