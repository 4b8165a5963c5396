"""generator/config.py: where settings are found, and the build's one clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.site.config import build_time, find_config_file
from generator.trust.errors import ConfigError


def test_a_pyproject_without_a_pith_mirror_table_means_no_settings(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nline-length = 99\n')
    assert find_config_file(None, tmp_path) is None
    (tmp_path / "pyproject.toml").write_text("[tool.pith-mirror]\njobs = 1\n")
    assert find_config_file(None, tmp_path) == (tmp_path / "pyproject.toml", {"jobs": 1})


@pytest.mark.parametrize(
    ("epoch", "time"),
    [
        (None, None),
        ("", None),
        ("0", "1970-01-01T00:00:00Z"),
        ("253402300799", "9999-12-31T23:59:59Z"),
        ("0" * 5000 + "1", "1970-01-01T00:00:01Z"),
    ],
)
def test_build_time_reads_source_date_epoch_up_to_the_last_second_of_9999(
    monkeypatch: pytest.MonkeyPatch, epoch: str | None, time: str | None
) -> None:
    if epoch is None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    assert build_time() == time


@pytest.mark.parametrize("value", ["[" * 1000 + "]" * 1000, "{a=" * 1000 + "1" + "}" * 1000])
def test_a_settings_file_nested_too_deeply_is_a_configuration_error(tmp_path: Path, value: str) -> None:
    """tomllib recurses: without care, a deep array is a RecursionError traceback."""
    path = tmp_path / "pith-mirror.toml"
    path.write_text(f"x = {value}\n")
    with pytest.raises(ConfigError, match="nests arrays or tables too deeply"):
        find_config_file(path, tmp_path)
