"""Stage 1: find the documents under content/ and decode their bytes strictly.

Rules:
- Walks are sorted, so every build sees files in the same order.
- Only `*.json` files are documents; `pages/` holds Markdown pages, and hidden
  files and editors' temporary files (`.#x`, `x~`, `x.swp`, `x.tmp`) are ignored.
- A symbolic link is followed only if it stays inside the content folder.
- (1) Size cap: at most `max_bytes + 1` bytes are ever read, so memory is bounded.
- (2) Strict decode: UTF-8 without BOM; one JSON value and nothing after it;
  no duplicate keys, no NaN or Infinity, nesting at most `max_depth` deep; the
  top level must be an object. Each failure has its own code.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .canonical import JsonFloat
from .errors import BuildError, Code, ConfigError, Problem, RejectionError, pointer
from .files import read_at_most, read_regular

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
"""A real bundle is about 15 KB; 4 MiB leaves room for years of events."""

DEFAULT_MAX_DEPTH = 64
"""Real documents nest 7 levels deep; 64 is far above that and far below
the interpreter's recursion limit."""

_IGNORED_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".crdownload")


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """Bytes that decoded strictly; nothing about them is trusted yet."""

    file: str
    raw: bytes
    data: dict[str, Any]

    @property
    def raw_sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()


def is_ignored_name(name: str) -> bool:
    """Hidden files and editor/download temporaries are never documents."""
    return name.startswith((".", "#")) or name.endswith(_IGNORED_SUFFIXES)


NOT_UTF8_NAME = "the file name is not valid UTF-8; rename the file to publish it"
"""Why a file whose name is not UTF-8 is not read: it could be named in no report,
cache or page. Like an unreadable file it names no Pith number."""


def is_utf8(name: str) -> bool:
    """False for a name with bytes that are not UTF-8 (the file system gives those as
    lone surrogates): no report, cache, page or JSON can hold it as it is."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """A file name as reports show it: each byte that is not UTF-8 (the file system
    gives those as lone surrogates) written as `\\xNN`, so what is printed stays UTF-8."""
    if is_utf8(name):
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def discover(content: Path) -> Iterator[tuple[Path, str]]:
    """Yield (path, name relative to content) for every document, sorted."""
    for path, rel in discover_names(content):
        yield Path(path), rel


def discover_names(content: Path) -> Iterator[tuple[str, str]]:
    """`discover` with plain strings: a no-op rebuild walks every name, so this stays cheap.

    A folder that cannot be listed, and a symbolic link to a folder (never
    followed), are listed too, by their own names: reading them fails, so the
    build refuses them as it refuses an unreadable file, and keeps every number
    whose documents may be in them. Skipped silently, their documents looked
    deleted, and their numbers were unpublished."""
    top = str(content)
    unlisted: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(top, onerror=unlisted.append, followlinks=False):
        yield from _unlisted(unlisted, top)
        rel_dir = os.path.relpath(dirpath, top)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d for d in dirnames if not is_ignored_name(d) and not (not prefix and d == "pages")
        )
        base = dirpath if dirpath.endswith(os.sep) else dirpath + os.sep  # (os.path.join's result)
        for name in sorted(filenames):
            if name.endswith(".json") and not is_ignored_name(name):
                yield base + name, prefix + name
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):  # (os.walk lists it, and does not go in)
                dirnames.remove(d)
                yield os.path.join(dirpath, d), prefix + d
    yield from _unlisted(unlisted, top)


def _unlisted(errors: list[OSError], top: str) -> Iterator[tuple[str, str]]:
    """The folders os.walk could not list (its onerror), by their names in content."""
    while errors:
        error = errors.pop(0)
        folder = error.filename
        if folder == top:  # (nothing in it can be told from deleted: no build)
            raise BuildError(top, f"cannot list the content folder: {error.strerror or error}")
        if isinstance(folder, str):
            yield folder, os.path.relpath(folder, top).replace(os.sep, "/")


def document_path(content: Path, rel: str) -> str | None:
    """The path of `rel` ("a/b.json") if `discover_names` would list it now, else None.

    The same rules for one name, so a watcher that knows which names changed
    need not list every document: no ignored part, a .json name, not under the
    top-level pages folder, no symbolic link to a folder on the way (os.walk
    does not follow them), and something there that is not a folder; or, by
    any name, a link to a folder (listed so that it is refused)."""
    parts = rel.split("/")
    if any(not part or is_ignored_name(part) for part in parts):
        return None
    if len(parts) > 1 and parts[0] == "pages":
        return None
    top = str(content)
    for depth in range(1, len(parts)):
        if os.path.islink(os.path.join(top, *parts[:depth])):
            return None
    path = os.path.join(top, *parts)
    if os.path.islink(path) and os.path.isdir(path):  # (a link to a folder: listed, to be refused)
        return path if not (len(parts) == 1 and parts[0] == "pages") else None
    if not parts[-1].endswith(".json") or not os.path.lexists(path) or os.path.isdir(path):
        return None
    return path


def _resolved(path: Path) -> Path | None:
    """`path` with every link followed; None for links that go round in a loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # (RuntimeError: a loop, before Python 3.13)
        return None


def _why_unlisted(folder: Path) -> str:
    try:
        with os.scandir(folder):
            return "it could not be listed while the build looked"
    except OSError as exc:
        return exc.strerror or str(exc)


def read_bytes(path: Path, content: Path, limits: Limits) -> bytes:
    """(1) Read at most max_bytes + 1 bytes; refuse links out of content/."""
    if path.is_symlink():
        target = _resolved(path)
        if target is None:
            raise RejectionError(Problem(Code.FILE_UNREADABLE, "", "cannot read: the symbolic link loops"))
        if not target.is_relative_to(content.resolve()):
            raise RejectionError(
                Problem(Code.FILE_OUTSIDE_CONTENT, "", "symbolic link points outside the content folder")
            )
        if target.is_dir():  # (listed by discover_names so that its numbers are kept)
            raise RejectionError(
                Problem(Code.FILE_UNREADABLE, "", "a symbolic link to a folder, which is never followed")
            )
    elif path.is_dir():  # (listed by discover_names: a folder it could not list)
        raise RejectionError(
            Problem(Code.FILE_UNREADABLE, "", f"a folder that cannot be listed ({_why_unlisted(path)})")
        )
    try:
        raw = read_at_most(path, limits.max_bytes + 1)
    except OSError as exc:
        raise RejectionError(Problem(Code.FILE_UNREADABLE, "", f"cannot read: {exc.strerror}")) from None
    if len(raw) > limits.max_bytes:
        raise too_large(limits)
    return raw


def too_large(limits: Limits) -> RejectionError:
    """A document over the size limit, wherever it was read from."""
    return RejectionError(
        Problem(Code.FILE_TOO_LARGE, "", f"file is larger than the limit of {limits.max_bytes} bytes")
    )


class _DuplicateKey(Exception):
    pass


class _NonFinite(Exception):
    pass


def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKey
    return result


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def _parse_float(text: str) -> JsonFloat:
    value = JsonFloat(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _NonFinite(text)
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_no_duplicates,
    parse_constant=_reject_constant,
    parse_float=_parse_float,
)


def decode(raw: bytes, limits: Limits) -> dict[str, Any]:
    """(2) Bytes to a JSON object, or a RejectionError naming what is wrong.

    Fast path: orjson parses, and the document is accepted as is only when
    re-serializing the result gives back exactly the input bytes (so there
    was no duplicate key, no escape or number spelled another way), no float
    occurs and the nesting is within bounds. Anything else (including every
    malformed input) takes the strict path below, which alone decides and
    explains rejections. Both paths accept exactly the same documents.
    """
    fast = _decode_fast(raw, limits.max_depth)
    if fast is not None:
        return fast
    return _decode_strict(raw, limits)


def _decode_fast(raw: bytes, max_depth: int) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    try:
        if orjson.dumps(value) != raw:
            return None
    except orjson.JSONEncodeError:  # e.g. nesting beyond orjson's own limit: the strict path decides
        return None
    if _has_float_or_too_deep(value, max_depth):
        return None
    return value


def _has_float_or_too_deep(value: dict[str, Any], max_depth: int) -> bool:
    """True if `value` holds a float or nests deeper than `max_depth` (the top level is depth 1).

    The nesting of a document that orjson accepted is far below the interpreter's
    recursion limit at the default `max_depth`; should it ever recurse too deep,
    the answer is True, so the strict path decides."""
    try:
        return _float_or_deeper(value.values(), max_depth - 1)
    except RecursionError:
        return True


def _float_or_deeper(children: Iterable[Any], levels_left: int) -> bool:
    """Whether `children` hold a float, or containers nested more than `levels_left` levels.

    Most values of a real document are strings, so they are passed over first."""
    for child in children:
        kind = type(child)
        if kind is str:
            continue
        if kind is dict:
            if not levels_left or _float_or_deeper(child.values(), levels_left - 1):
                return True
        elif kind is list:
            if not levels_left or _float_or_deeper(child, levels_left - 1):
                return True
        elif kind is float:
            return True
    return False


def json_type_name(value: object) -> str:
    """A decoded value's JSON type as a reader of the file would name it:
    "null" and "an array", not Python's "NoneType" and "list"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    for kind, name in JSON_TYPE_NAMES.items():
        if isinstance(value, kind):
            return name
    return type(value).__name__


JSON_TYPE_NAMES: dict[type, str] = {
    bool: "true or false",
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number with a fraction",
}


def _rejection(code: Code, message: str, where: str = "") -> RejectionError:
    """A refusal with its code, message and JSON pointer, to raise."""
    return RejectionError(Problem(code, where, message))


def _decode_text(raw: bytes, too_deep: str) -> tuple[Any, str]:
    """Strict JSON of any shape, with the text it was decoded from: plain UTF-8
    with no byte-order mark, no key twice in one object, no NaN or Infinity,
    nothing after the value. RejectionError otherwise; `too_deep` says what
    nesting past Python's recursion limit is."""
    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise _rejection(Code.JSON_BOM, "file starts with a byte-order mark; Pith JSON is plain UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _rejection(Code.JSON_INVALID_UTF8, f"invalid UTF-8 at byte {exc.start}") from None
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise _rejection(Code.JSON_INVALID, "file is empty")
    try:
        value, end = _DECODER.raw_decode(text, start)
    except _DuplicateKey:
        found = _find_duplicate(text)
        if found is None:  # (what follows the duplicate cannot even be decoded to find it)
            raise _rejection(Code.JSON_DUPLICATE_KEY, "a key appears twice in one object") from None
        where, key = found
        raise _rejection(Code.JSON_DUPLICATE_KEY, f"key {key!r} appears twice in one object", where) from None
    except _NonFinite as exc:
        raise _rejection(Code.JSON_NON_FINITE, f"{exc.args[0]} is not a finite JSON number") from None
    except RecursionError:
        raise _rejection(Code.JSON_TOO_DEEP, too_deep) from None
    except json.JSONDecodeError as exc:
        # (json's messages end "... at" before the position it leaves out: the line and column say it)
        reason = f"line {exc.lineno} column {exc.colno}: {exc.msg.lower().removesuffix(' at')}"
        if _ends_early(text, exc):
            reason = (
                f"the file ends early, after {len(raw):,} bytes, in the middle of the JSON value"
                f" ({reason}): it looks cut off, as an interrupted download or copy leaves a file"
            )
        raise _rejection(Code.JSON_INVALID, reason) from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        message = str(exc)
        if "integer string conversion" in message:
            limit = sys.get_int_max_str_digits()
            message = f"an integer has more than {limit:,} digits, more than any Pith document holds"
        raise _rejection(Code.JSON_INVALID, message) from None
    if text[end:].strip(" \t\r\n"):
        raise _rejection(Code.JSON_TRAILING_DATA, f"unexpected data after the JSON value at character {end}")
    return value, text


_TOKEN_START = re.compile(r"t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?|-?[0-9]*\.?[0-9]*([eE][+-]?[0-9]*)?")
"""What is left of a literal or a number that a file cut off in its middle ends with."""


def _ends_early(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the text is a JSON value cut short: the decoder ran out of text (a string
    never closed, or nothing, or only the start of a literal or a number, after the
    place it failed), rather than meeting a wrong character. Said apart from other
    malformed JSON because its cause, a copy or download that stopped, is another."""
    if exc.msg.startswith("Unterminated string"):
        return True
    rest = text[exc.pos :].rstrip(" \t\r\n")
    return _TOKEN_START.fullmatch(rest) is not None


def parse_json(data: bytes) -> Any:
    """Strict JSON of any shape, read by the rules documents are (`_decode_text`):
    keys, trust and signature files, and what `compare` reads of other sites. A
    ValueError's text completes "FILE is ..."; `json.loads` alone would take a
    key given twice (pinning whichever came last), NaN, and UTF-16."""
    try:
        return _decode_text(data, "it nests too deeply")[0]
    except RejectionError as exc:
        where = f" (at {exc.problem.pointer})" if exc.problem.pointer else ""
        raise ValueError(f"not valid JSON: {exc.problem.message}{where}") from None


def _decode_strict(raw: bytes, limits: Limits) -> dict[str, Any]:
    value, text = _decode_text(raw, f"nesting is deeper than {limits.max_depth} levels")
    if not isinstance(value, dict):
        raise _rejection(Code.JSON_NOT_OBJECT, f"the top level is {json_type_name(value)}, not an object")
    too_deep = first_too_deep(value, limits.max_depth)
    if too_deep is not None:
        raise _rejection(Code.JSON_TOO_DEEP, f"nesting is deeper than {limits.max_depth} levels", too_deep)
    if _SURROGATE_ESCAPE.search(text):
        lone = first_lone_surrogate(value)
        if lone is not None:
            where, what = lone
            raise _rejection(
                Code.JSON_INVALID_UTF8,
                f"{what} holds a \\u escape of a lone surrogate, which has no UTF-8 (so no canonical) form",
                where,
            )
    return value


def load_document(path: Path, file: str, content: Path, limits: Limits) -> SourceDocument:
    """Read and strictly decode one document (steps 1 and 2)."""
    return decode_document(read_bytes(path, content, limits), file, limits)


def decode_document(raw: bytes, file: str, limits: Limits) -> SourceDocument:
    """Strictly decode one document's bytes, however they were read (step 2)."""
    return SourceDocument(file=file, raw=raw, data=decode(raw, limits))


def first_too_deep(value: Any, max_depth: int) -> str | None:
    """Pointer to the first container nested deeper than max_depth, or None."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if depth > max_depth:
            return pointer(*path)
        if isinstance(node, dict):
            stack.extend((v, depth + 1, (*path, k)) for k, v in node.items() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1, (*path, i)) for i, v in enumerate(node) if isinstance(v, dict | list))
    return None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""Cheap test on the text: only a \\uD800-\\uDFFF escape can decode to a lone surrogate."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def first_lone_surrogate(value: Any) -> tuple[str, str] | None:
    """(pointer, "a string" or "a key of this object") of the first lone surrogate, or None.
    A bad key is pointed at through its object, so the pointer itself stays printable."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return pointer(*path), "a string"
        elif isinstance(node, dict):
            for key, child in node.items():
                if _SURROGATE.search(key):
                    return pointer(*path), "a key of this object"
                stack.append((child, (*path, key)))
        elif isinstance(node, list):
            stack.extend((child, (*path, i)) for i, child in enumerate(node))
    return None


class _Pairs(list[tuple[str, Any]]):
    pass


def _find_duplicate(text: str) -> tuple[str, str] | None:
    """Second, slow decode that keeps pairs, to name where the duplicate is; None
    when the rest of the text cannot be decoded (nested past the interpreter's
    recursion limit, say). Numbers are not converted: only the keys matter here,
    and an integer past Python's digit limit must not stop the search."""
    try:
        tree = json.loads(
            text,
            object_pairs_hook=_Pairs,
            parse_constant=lambda c: None,
            parse_int=lambda digits: 0,
            parse_float=lambda digits: 0,
        )
    except (RecursionError, ValueError):
        return None
    queue: deque[tuple[Any, tuple[str | int, ...]]] = deque([(tree, ())])
    while queue:
        node, path = queue.popleft()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, child in node:
                if key in seen:
                    return pointer(*path, key), key
                seen.add(key)
                queue.append((child, (*path, key)))
        elif isinstance(node, list):
            queue.extend((child, (*path, i)) for i, child in enumerate(node))
    return None


MAX_SETTINGS_FILE = 1024 * 1024
"""The largest settings or keys file read, in bytes: a real one is a few hundred;
a bound keeps `--config /dev/zero` (or a huge file) from filling memory."""


def read_settings_file(path: Path, setting: str) -> bytes:
    """A settings or keys file's bytes, refusing what is no regular file or larger than
    MAX_SETTINGS_FILE: a device (/dev/zero) would be read without end and a named pipe
    would wait for a writer forever, so neither is read at all."""
    try:
        return read_regular(path, MAX_SETTINGS_FILE)
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise ConfigError(
                setting,
                f"{shown_name(str(path))} is larger than {MAX_SETTINGS_FILE:,} bytes, far more than any"
                " settings or keys file holds",
            ) from None
        raise ConfigError(setting, f"cannot read {shown_name(str(path))}: {exc.strerror}") from None


def read_json_setting(path: Path, setting: str, limit: int) -> Any:
    """A small JSON file that a setting names (a key, trust or manifest file), read and
    decoded as strictly as a document; any problem is a ConfigError for `setting`."""
    shown = shown_name(str(path))
    try:
        return parse_json(read_regular(path, limit))
    except OSError as exc:
        raise ConfigError(setting, f"cannot read {shown}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(setting, f"{shown} is {exc}") from None
