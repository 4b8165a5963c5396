"""/favicon.ico: a real 16 x 16 icon, the same bytes every build, linked from every page."""

from __future__ import annotations

import struct

from generator.site.favicon import favicon_ico


def test_the_icon_is_one_16_by_16_bitmap_of_32_bits() -> None:
    data = favicon_ico()
    reserved, kind, count = struct.unpack_from("<HHH", data)
    assert (reserved, kind, count) == (0, 1, 1)
    width, height, _, _, planes, bits, size, offset = struct.unpack_from("<BBBBHHII", data, 6)
    assert (width, height, planes, bits, offset) == (16, 16, 1, 32, 22)
    assert size == len(data) - offset
    header_size, w, h, _, depth = struct.unpack_from("<IiiHH", data, offset)
    assert (header_size, w, h, depth) == (40, 16, 32, 32)  # (an icon's bitmap is twice its height)
    assert len(data) == 22 + 40 + 16 * 16 * 4 + 16 * 4
    assert favicon_ico() == data
