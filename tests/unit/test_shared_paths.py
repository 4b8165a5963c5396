"""A worker's shareable files under a race: another worker replacing a short form
that both records share must leave this record's other forms as they were."""

from __future__ import annotations

import os
from pathlib import Path

import factories
import pytest

from generator.build import write
from generator.build.write import Writer
from generator.site.render import OutputFile
from generator.site.shared_paths import own_shareable_files

BODY = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def test_a_shared_short_form_replaced_mid_write_leaves_the_longer_forms_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another record with the same 8 characters: its worker replaces `pith/<8>.html`
    just before each of this worker's links, as a full build's workers may."""
    record = factories.summary(pith_number=f"pith:2021:{BODY}")
    files = [f for f in own_shareable_files(record, "/") if f.path.startswith("pith/")]
    shared = tmp_path / f"pith/{BODY[:8]}.html"
    real_link = os.link

    def racing_link(source: str, target: str) -> None:
        if shared.exists():
            other = Writer(tmp_path, atomic=False)  # (another process's writer)
            other.write([OutputFile(f"pith/{BODY[:8]}.html", b"the other record's redirect")])
        real_link(source, target)

    monkeypatch.setattr(write.os, "link", racing_link)
    Writer(tmp_path, atomic=False).write(files)
    ours = files[0].data
    assert f"url=/pith/{BODY}".encode() in ours
    for n in (12, 16):  # (the 8-character form is shared: the site-wide stage remakes it)
        for page in (f"pith/{BODY[:n]}.html", f"pith/{BODY[:n]}/index.html"):
            assert (tmp_path / page).read_bytes() == ours, page


@pytest.mark.parametrize("base", ["/", "/mirror/", "/a-mirror-name/"])
def test_a_short_form_redirect_fits_one_tar_block(base: str) -> None:
    """A GitHub Pages deployment is a tar, which stores a file in 512-byte blocks: a
    record's six short-form files each take one block, not two, at the root and under
    a base path of up to 15 characters."""
    record = factories.summary(pith_number=f"pith:2021:{BODY}")
    redirects = [f for f in own_shareable_files(record, base) if f.path.startswith("pith/")]
    assert len(redirects) == 6
    page = redirects[0].data
    assert len(page) <= 512, len(page)
    assert f'url={base}pith/{BODY}"'.encode() in page and f'href="{base}pith/{BODY}"'.encode() in page
