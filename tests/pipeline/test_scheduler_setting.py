"""The scheduler setting without a cluster: what it accepts, what it refuses, where
it comes from, how tasks are batched, and what a build says when Dask is not
installed (these run in the quick start, which installs no Dask)."""

from __future__ import annotations

import itertools
import shlex
import sys
from pathlib import Path

import pytest
from clusterkit import cli_build, few, inputs, make
from sitekit import Project, all_paths, tree

from generator.build import cluster as cluster_module
from generator.commands.cli import build_parser, main
from generator.commands.site_commands import view_command
from generator.site.config import SiteConfig, is_scheduler, load_config
from generator.trust.errors import ConfigError


@pytest.fixture(scope="module")
def files() -> list[tuple[str, bytes]]:
    return inputs()


def test_without_dask_a_cluster_build_says_what_to_install(
    tmp_path: Path,
    files: list[tuple[str, bytes]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    p = make(tmp_path, few(files))
    assert main(cli_build(p, "--jobs", "1")) == 0
    before, paths = tree(p.site), all_paths(tmp_path)
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "distributed", None)  # (`import distributed` fails)
    code = main(cli_build(p, "--clean", "--scheduler", "local"))
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("pith-mirror: configuration: scheduler: building on a Dask cluster needs")
    assert "pip install 'pith-mirror[cluster]'" in err and "Traceback" not in err
    assert tree(p.site) == before and all_paths(tmp_path) == paths


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("local", True),
        ("tcp://127.0.0.1:8786", True),
        ("tls://scheduler.example.org:8786", True),
        ("scheduler:8786", True),
        ("tcp://[::1]:8786", True),
        ("", False),
        ("Local", False),
        ("tcp://host", False),
        ("tcp://host:0", False),
        ("tcp://host:70000", False),
        ("http://host:8786", False),
        ("tcp://host:8786/path", False),
        ("tcp://ho st:8786", False),
    ],
)
def test_the_scheduler_setting_is_local_or_an_address(value: str, ok: bool) -> None:
    assert is_scheduler(value) is ok


def test_a_bad_scheduler_setting_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = Project(tmp_path)
    p.add_real()
    assert main(cli_build(p, "--scheduler", "tcp://nowhere")) == 2
    err = capsys.readouterr().err
    assert "configuration: scheduler: 'tcp://nowhere' is neither \"local\" nor" in err
    assert not p.site.exists()


def test_the_suggested_serve_command_leaves_the_scheduler_out() -> None:
    """Options only `build` takes are left out, however written, and what is left is a
    command `serve` takes."""
    words = ["build", "content", "site", "--scheduler", "tcp://h:8786", "--jobs", "4", "--sched=local"]
    args = build_parser().parse_args(words)
    args.argv = words
    suggested = view_command(args)
    assert suggested.endswith("serve content site --jobs 4")
    serve = build_parser().parse_args(shlex.split(suggested)[1:])
    assert serve.command == "serve" and serve.jobs == 4 and str(serve.site) == "site"


def test_batches_are_one_to_four_a_worker_of_hundreds_and_never_over_max_batch() -> None:
    def tasks(items: int, workers: int) -> tuple[int, int]:
        size = cluster_module.batch_size(items, workers)
        return size, -(-items // size)

    assert tasks(4_000, 2) == (500, 8)  # (four tasks a worker)
    assert tasks(2_000, 2) == (250, 8)
    assert tasks(600, 2) == (300, 2)  # (fewer, to hold 250 each)
    assert tasks(60, 2) == (30, 2)  # (one a worker, however small)
    assert tasks(20_000, 64) == (313, 64)
    assert tasks(20_000, 2) == (1000, 20)  # (no task over 1,000)
    assert tasks(100_000, 64) == (391, 256)
    assert tasks(3_000_000, 64) == (1000, 3_000)  # (then as many as MAX_BATCH takes)
    assert tasks(1, 8) == (1, 1)


def test_a_maps_last_tasks_are_smaller_and_its_tasks_cover_every_item_once() -> None:
    def sizes(items: int, workers: int, least: int = 1) -> list[int]:
        bounds = cluster_module.batch_bounds(items, workers, least)
        assert bounds[0][0] == 0 and bounds[-1][1] == items
        assert all(end == next_start for (_, end), (next_start, _) in itertools.pairwise(bounds))
        return [end - start for start, end in bounds]

    assert sizes(20_000, 2) == [1000] * 18 + [500, 375, 282, 250, 250, 343]
    assert sizes(4_000, 2) == [500] * 6 + [250] * 4
    assert sizes(600, 2) == [300, 300]  # (tasks near MIN_BATCH already: as batch_size cuts them)
    assert sizes(20_000, 64) == [313] * 63 + [281]
    assert sizes(1, 8) == [1]
    assert sizes(1_000, 64, least=64) == [64] * 15 + [40]  # (a pool's chunksize: only ever larger)
    assert sizes(20_000, 2, least=300) == [1000] * 18 + [500, 375, 300, 300, 525]  # (nor tapered under it)
    for items in (999, 1_001, 2_501, 7_777, 123_457):
        cut = sizes(items, 3)
        assert max(cut) == cluster_module.batch_size(items, 3)
        assert all(size >= cluster_module.MIN_BATCH for size in cut[:-1])


def test_calls_that_stand_for_many_records_are_cut_by_records() -> None:
    """A map whose calls each read 16 documents gets the tasks an unbatched map of
    the records would, in whole calls, covering every call once, none empty."""
    for calls, weight, workers in ((1_250, 16, 2), (125, 16, 2), (7, 16, 3), (1, 16, 8), (20_000, 1, 2)):
        bounds = cluster_module.weighted_bounds(calls, weight, workers)
        assert bounds[0][0] == 0 and bounds[-1][1] == calls
        assert all(end == next_start for (_, end), (next_start, _) in itertools.pairwise(bounds))
        assert all(end > start for start, end in bounds)
        records = cluster_module.batch_bounds(calls * weight, workers)
        assert len(bounds) <= len(records)
        largest = max(end - start for start, end in bounds)
        assert largest == -(-max(end - start for start, end in records) // weight)
    # 20,000 records read 16 at a time: the tasks of 20,000 records, not of 20,000 calls
    assert len(cluster_module.weighted_bounds(1_250, 16, 2)) == 24
    assert cluster_module.weighted_bounds(20_000, 1, 2) == cluster_module.batch_bounds(20_000, 2)
    # a pool's chunksize, in calls, only ever makes tasks larger
    chunked = cluster_module.weighted_bounds(1_250, 16, 2, least=40)
    assert all(end - start >= 40 for start, end in chunked[:-1])


def test_the_setting_comes_from_the_settings_file_too(tmp_path: Path) -> None:
    assert SiteConfig().scheduler is None  # (the local pool by default)
    settings = tmp_path / "pith-mirror.toml"
    settings.write_text('scheduler = "tcp://scheduler.example.org:8786"\n', "utf-8")
    assert load_config(settings, {}).scheduler == "tcp://scheduler.example.org:8786"
    assert load_config(settings, {"scheduler": "local"}).scheduler == "local"  # (the flag wins)
    settings.write_text("scheduler = 8786\n", "utf-8")
    with pytest.raises(ConfigError, match="expected a string, found an integer"):
        load_config(settings, {})
