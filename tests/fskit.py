"""File-system conditions a test cannot make with permissions when it runs as root.

`chmod 000` does not stop root from listing a folder, and CI runs as root: a
folder that cannot be listed is made by having `os.scandir` refuse it, which
`os.walk`, the build's discovery and the site checks all list through.
"""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest


def refuse_listing(monkeypatch: pytest.MonkeyPatch, folder_name: str) -> None:
    """Make listing any folder named `folder_name` fail with "Permission denied"."""
    real = os.scandir

    def refusing(path: Any) -> Any:
        if os.path.basename(str(path)) == folder_name:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", refusing)
