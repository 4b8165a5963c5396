"""The site's icon, `/favicon.ico`: browsers ask for it on every site, and a 404
for it fills a host's logs and a reader's console.

It is made here, a few hundred bytes, rather than shipped as a binary file: a
16 x 16 ICO holding one 32-bit bitmap, the letter P in white on the pages'
accent blue, with rounded corners.
"""

from __future__ import annotations

import struct

_GLYPH = (
    "..############..",
    ".##############.",
    "################",
    "####.......#####",
    "####.######.####",
    "####.######.####",
    "####.######.####",
    "####.######.####",
    "####.......#####",
    "####.###########",
    "####.###########",
    "####.###########",
    "####.###########",
    "################",
    ".##############.",
    "..############..",
)
"""`#` is the blue background, `.` inside the square is the white letter, `.` at a
corner is transparent."""

_BLUE = bytes((0xBF, 0x5F, 0x1F, 0xFF))  # BGRA of #1f5fbf
_WHITE = bytes((0xFF, 0xFF, 0xFF, 0xFF))
_CLEAR = bytes(4)


def _corner(x: int, y: int) -> bool:
    edge = (0, 15)
    return (x in edge and y in (0, 1, 14, 15)) or (y in edge and x in (0, 1, 14, 15))


def favicon_ico() -> bytes:
    """The icon's bytes (always the same)."""
    pixels = b"".join(
        (_CLEAR if _corner(x, y) else _BLUE if cell == "#" else _WHITE)
        for y, row in reversed(list(enumerate(_GLYPH)))  # (a bitmap is stored bottom row first)
        for x, cell in enumerate(row)
    )
    mask = bytes(4 * 16)  # (the AND mask: unused with 32-bit pixels, 4 bytes a row)
    bitmap = struct.pack("<IiiHHIIiiII", 40, 16, 32, 1, 32, 0, len(pixels) + len(mask), 0, 0, 0, 0)
    image = bitmap + pixels + mask
    header = struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", 16, 16, 0, 0, 1, 32, len(image), 22)
    return header + image
