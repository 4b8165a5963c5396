"""generator/config.py: where settings are found, and the build's one clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.config import build_time, find_config_file


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
