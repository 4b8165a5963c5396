"""The optional extras in tests: a test that needs one (a Dask cluster, the object-store
library, the S3 stand-in) skips where it is not installed, as after the quick start's
`pip install -e '.[test]'`, and fails instead with PITH_MIRROR_REQUIRE_EXTRAS=1, as
`.ci/run` sets after installing `.[ci]`: in CI a missing extra is a failure, never a skip."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def need(module: str, extra: str, *, module_level: bool = False) -> ModuleType:
    """`module`, imported; else a skip naming the extra that brings it (or, in CI, the ImportError)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("PITH_MIRROR_REQUIRE_EXTRAS") == "1":
            raise
        brings = f"'.[{extra}]'" if extra == "ci" else f"'.[{extra}]' (or '.[ci]')"
        pytest.skip(f"{module} is not installed: pip install -e {brings}", allow_module_level=module_level)
