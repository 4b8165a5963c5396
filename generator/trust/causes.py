"""Refusals grouped by cause: what the terminal and the report say first.

Rules:
- One refused document has one cause: the problem that explains the others. A
  key that is not pinned makes every signature fail and the recomputed state
  differ; an edited title makes its event's hash, the bundle's hash and their
  signatures fail. The cause is the problem of the highest `RANK`, then the
  first by pointer; the rest of the document's problems follow from it and are
  counted, not repeated (every one is still in `report.json`).
- Documents are grouped by their cause's code; for a key the message too, which
  names the key, so that files signed by two different keys are two causes.
- A group says how many files, a sentence (`CODE_HELP`) and a hint: what to do.
  For a key, the hint names the key that signed them and how to pin it.
- Pure functions over `Rejection`s: no I/O, no printing (the CLI prints).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import CODE_HELP, Code, Rejection, printable

if TYPE_CHECKING:
    from .keys import Keyring

_RANKED: tuple[tuple[Code, ...], ...] = (
    # nothing else could be read
    (
        Code.FILE_TOO_LARGE,
        Code.FILE_UNREADABLE,
        Code.FILE_OUTSIDE_CONTENT,
        Code.JSON_INVALID_UTF8,
        Code.JSON_BOM,
        Code.JSON_INVALID,
        Code.JSON_TRAILING_DATA,
        Code.JSON_DUPLICATE_KEY,
        Code.JSON_NON_FINITE,
        Code.JSON_TOO_DEEP,
        Code.JSON_NOT_OBJECT,
        Code.DOC_UNKNOWN_KIND,
    ),
    # not the format
    (Code.SCHEMA_MISSING_FIELD, Code.SCHEMA_WRONG_TYPE, Code.SCHEMA_BAD_VALUE, Code.PITH_BAD_FORMAT),
    # another signer: every signature and the state then fail with it
    (Code.KEY_NOT_PINNED, Code.KEY_UNKNOWN, Code.KEY_FINGERPRINT_MISMATCH, Code.KEY_BAD_ALGORITHM),
    # the field that was changed, named
    (
        Code.TITLE_MISMATCH,
        Code.ALIAS_MISMATCH,
        Code.RECORD_SOURCE_MISMATCH,
        Code.PITH_MISMATCH,
        Code.PITH_YEAR_MISMATCH,
        Code.PITH_SHORT_MISMATCH,
        Code.EVENT_WRONG_SUBJECT,
        Code.EVENT_PAYLOAD_MISMATCH,
        Code.EVENT_UNKNOWN_TYPE,
        Code.EVENT_DUPLICATE,
        Code.EVENT_NO_RECORD_CREATED,
        Code.BUNDLE_CONFLICT,
        Code.BUNDLE_ROLLBACK,
        Code.RECORD_CONFLICT,
    ),
    # a hash that no longer matches what was signed
    (
        Code.RECORD_HASH_MISMATCH,
        Code.RECEIPT_HASH_MISMATCH,
        Code.EVENT_HASH_MISMATCH,
        Code.EVENT_ID_MISMATCH,
        Code.STATE_HASH_MISMATCH,
    ),
    # a signature that does not verify
    (Code.SIGNATURE_MALFORMED, Code.RECEIPT_BAD_SIGNATURE, Code.EVENT_BAD_SIGNATURE),
    # the bundle's own hash and signature, which any change to it breaks
    (Code.BUNDLE_HASH_MISMATCH, Code.BUNDLE_BAD_SIGNATURE),
    # what a failed event or key leaves behind
    (Code.STATE_MISMATCH,),
    (Code.DOC_MORE_PROBLEMS,),
)

RANK: dict[Code, tuple[int, int]] = {
    code: (tier, place) for tier, codes in enumerate(_RANKED) for place, code in enumerate(codes)
}
"""Which problem of a document is its cause: the lowest rank (tier, then place in it)."""

KEY_CODES = frozenset(_RANKED[2])

EXAMPLES = 3
"""Files named on the terminal for each cause; the report lists them all."""

_CHANGED = (
    "the document was changed after the resolver signed it: take it again from the resolver"
    " (never edit a signed document), or leave it out"
)
_NOT_JSON = "the file is not a whole JSON document: take it again from the resolver, or leave it out"
_NOT_FORMAT = (
    "this is not a Pith record or bundle as the resolver serves it (/pith/P.json, /pith/P/bundle.json):"
    " check what the file is, or leave it out"
)

HINTS: dict[Code, str] = {
    **dict.fromkeys(_RANKED[0], _NOT_JSON),
    **dict.fromkeys(_RANKED[1], _NOT_FORMAT),
    **dict.fromkeys(_RANKED[3] + _RANKED[4] + _RANKED[5] + _RANKED[6] + _RANKED[7], _CHANGED),
    Code.FILE_TOO_LARGE: (
        "if the document is genuine, raise the limit: max_bytes in the settings, or --max-bytes for verify"
    ),
    Code.FILE_UNREADABLE: "make it a regular file the mirror can read, or leave it out",
    Code.FILE_OUTSIDE_CONTENT: "copy the file into the content folder rather than linking to it",
    Code.DOC_UNKNOWN_KIND: _NOT_FORMAT,
    Code.EVENT_UNKNOWN_TYPE: "the mirror does not know how to merge this event type; a newer pith-mirror may",
    Code.BUNDLE_ROLLBACK: (
        "content holds an older bundle than the one published, which stays: put the newer bundle back"
    ),
    Code.BUNDLE_CONFLICT: "keep only the bundle the resolver serves now; the published one stays meanwhile",
    Code.RECORD_CONFLICT: "keep only the record document the resolver serves now",
    Code.DOC_MORE_PROBLEMS: "pith-mirror verify FILE lists every problem of one file",
}


def key_hint(pinned: str, example: str) -> str:
    """For a key that is not pinned: who signed, and how to pin it (never done for the operator)."""
    return (
        f"they are signed by that key, not by a pinned one ({pinned}). Only if you trust it (compare its"
        " fingerprint with the one its owner publishes, such as the resolver's /pith-signing-key.json):"
        f" put its entry (the public_keys entry of {example}, or the one its owner publishes) in a JSON"
        ' file and build with --keys FILE, or keys = "FILE" in pith-mirror.toml; else leave these files out'
    )


@dataclass(frozen=True, slots=True)
class Refused:
    """One refused file: its cause, and how many other problems follow from it."""

    cause: Rejection
    more: int

    @property
    def file(self) -> str:
        return self.cause.file


@dataclass(frozen=True, slots=True)
class Cause:
    """Files refused for one cause: its code, the message they share ("" when each
    says its own), a sentence, a hint, and the files in name order."""

    code: Code
    message: str
    hint: str
    files: tuple[Refused, ...]

    @property
    def sentence(self) -> str:
        return CODE_HELP[self.code]

    def as_json(self) -> dict[str, object]:
        return {
            "code": self.code.value,
            "files": len(self.files),
            "sentence": self.sentence,
            "message": self.message,
            "hint": self.hint,
            "refused": [
                {
                    "file": r.file,
                    "pointer": r.cause.pointer,
                    "message": r.cause.message,
                    "more_problems": r.more,
                }
                for r in self.files
            ],
        }


def cause_of(problems: Sequence[Rejection]) -> Rejection:
    """The problem that explains a document's others (see the module's rules)."""
    return min(problems, key=lambda r: (RANK.get(r.code, (len(_RANKED), 0)), r.pointer, r.message))


def by_cause(rejections: Iterable[Rejection], pinned: str) -> tuple[Cause, ...]:
    """Group refused documents by cause: the most files first, then by rank and code.

    `pinned` names the pinned keys (e.g. "pith-v1-2026-05, fingerprint 8d4b…"), for
    the hint of a key that is not pinned."""
    per_file: dict[str, list[Rejection]] = {}
    for rejection in rejections:
        per_file.setdefault(rejection.file, []).append(rejection)
    groups: dict[tuple[Code, str], list[Refused]] = {}
    for problems in per_file.values():
        cause = cause_of(problems)
        named = cause.message if cause.code in KEY_CODES else ""
        groups.setdefault((cause.code, named), []).append(Refused(cause, len(problems) - 1))
    causes = []
    for (code, named), refused in groups.items():
        refused.sort(key=lambda r: r.file)
        shared = named or (refused[0].cause.message if len({r.cause.message for r in refused}) == 1 else "")
        hint = key_hint(pinned, refused[0].file) if code in KEY_CODES else HINTS.get(code, _CHANGED)
        causes.append(Cause(code, shared, hint, tuple(refused)))
    causes.sort(key=lambda c: (-len(c.files), RANK.get(c.code, (len(_RANKED), 0)), c.code.value, c.message))
    return tuple(causes)


def pinned_names(keyring: Keyring) -> str:
    """ "ID, fingerprint F; ..." for the pinned keys, as a key's hint names them."""
    return "; ".join(f"pinned: {k.key_id}, fingerprint {k.fingerprint_hex}" for k in keyring.keys)


def terminal_lines(causes: Sequence[Cause], report_path: str, examples: int = EXAMPLES) -> list[str]:
    """The terminal's account of refusals: per cause, a heading with the count, the
    sentence, the hint, and a few files by their cause's line (greppable as every
    refusal line is: `file: pointer: code: message`)."""
    if not causes:
        return []
    files = sum(len(c.files) for c in causes)
    lines = [
        f"refused {files:,} file(s) for {len(causes)} cause(s); every problem of every file is in"
        f" {report_path} (pith-mirror verify FILE lists one file's)"
    ]
    for cause in causes:
        said = f": {cause.message}" if cause.code in KEY_CODES else ""  # (else each file's line says it)
        lines.append(printable(f"{cause.code.value}: {len(cause.files):,} file(s): {cause.sentence}{said}"))
        lines.append(f"  hint: {cause.hint}")
        for refused in cause.files[:examples]:
            more = f" (and {refused.more:,} more problem(s) that follow from it)" if refused.more else ""
            lines.append(f"  {refused.cause.line()}{more}")
        if len(cause.files) > examples:
            lines.append(f"  ... and {len(cause.files) - examples:,} more file(s) with this cause")
    return lines
