"""What `pull` is asked for: Pith numbers in any written form, arXiv ids, DOIs.

Rules:
- A whole number (`pith:YYYY:` + 26 base32 characters) or its bare body names
  a number outright; nothing about it is looked up.
- A short form (8, 12 or 16 base32 characters, with or without `pith:`), an
  arXiv id or a DOI names a number only through the source's look-ups; what a
  look-up answers is a hint, never trusted: the fetched documents must verify
  as that number's.
- A list file holds one item a line, in any of those forms (`arxiv:ID` and
  `doi:DOI`, or a bare arXiv id or DOI, or a doi.org link); `#` starts a
  comment. A line that is none of them is a usage error naming the line.
- Library only: raises ValueError for an item it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..trust.model import BODY_RE, PITH_RE

TargetKind = Literal[
    "number", "pith_short_8", "pith_short_12", "pith_short_16", "arxiv", "arxiv_version", "doi"
]

_SHORT = re.compile(r"(?:PITH:)?([A-Z2-7]{8}|[A-Z2-7]{12}|[A-Z2-7]{16})")
_ARXIV = re.compile(r"(?:arxiv:)?([0-9]{4}\.[0-9]{4,5}(?:v[0-9]+)?|[a-z][a-z.-]*/[0-9]{7}(?:v[0-9]+)?)", re.I)
_VERSIONED = re.compile(r"v[0-9]+$")
_DOI = re.compile(r"(?:doi:|https?://(?:dx\.)?doi\.org/)?(10\.[0-9]{4,9}/\S+)", re.I)
_SHORT_KINDS: dict[int, TargetKind] = {8: "pith_short_8", 12: "pith_short_12", 16: "pith_short_16"}
MAX_LIST_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True, order=True)
class Target:
    """One thing asked for: a number's body (`kind` "number"), or a value to look up."""

    kind: TargetKind
    value: str

    def __str__(self) -> str:
        return self.value if self.kind == "number" else f"{self.kind}:{self.value}"


def parse_item(text: str) -> Target:
    """One item as written on the command line or in a list file."""
    item = text.strip()
    upper = item.upper()
    if whole := PITH_RE.fullmatch(item):
        return Target("number", whole["body"])
    if BODY_RE.fullmatch(upper.removeprefix("PITH:")):
        return Target("number", upper.removeprefix("PITH:"))
    if short := _SHORT.fullmatch(upper):
        return Target(_SHORT_KINDS[len(short[1])], short[1])
    return parse_alias(item)


def parse_alias(item: str, kind: str | None = None) -> Target:
    """An arXiv id or a DOI (`kind` forces one), as cited."""
    item = item.strip()
    if kind in (None, "arxiv") and (arxiv := _ARXIV.fullmatch(item)):
        value = arxiv[1] if "/" in arxiv[1] else arxiv[1].lower()
        return Target("arxiv_version" if _VERSIONED.search(value) else "arxiv", value)
    if kind in (None, "doi") and (doi := _DOI.fullmatch(item)):
        return Target("doi", doi[1].lower())
    wanted = {"arxiv": "an arXiv id", "doi": "a DOI"}.get(kind or "", "a Pith number, arXiv id or DOI")
    raise ValueError(f"{item!r} is not {wanted}")


def read_list(path: Path) -> list[Target]:
    """The items of a list file; ValueError naming the first line that is none."""
    with path.open("rb") as handle:
        data = handle.read(MAX_LIST_BYTES + 1)
    if len(data) > MAX_LIST_BYTES:
        raise ValueError(f"{path} is larger than {MAX_LIST_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    targets = []
    for number, line in enumerate(text.splitlines(), 1):
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        try:
            targets.append(parse_item(item))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    return targets
