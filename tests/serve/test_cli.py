"""The real commands in a subprocess: `serve` and `build --watch` start, work, and stop on Ctrl-C.

Output is read line by line with a deadline (never a fixed sleep), and SIGINT
is what a terminal sends on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import factories as f
import pytest
from runkit import Running, group_processes, wait_for_no_process

from .conftest import BUNDLE_PAGE, RECORD_PAGE, REPO, SEED_BUNDLE, SEED_RECORD, TIMEOUT, Workspace, poll


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for item in started:
        if item.process.poll() is None:
            item.process.kill()
            item.process.wait(TIMEOUT)


def fetch(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_serve_prints_its_url_serves_rebuilds_and_stops_on_ctrl_c(
    workspace: Workspace, running: list[Running]
) -> None:
    workspace.add(SEED_RECORD)
    process = Running(
        ["serve", "--port", "0", "--jobs", "1", str(workspace.content), str(workspace.site)], workspace.root
    )
    running.append(process)
    found = process.wait_for_line(r"Serving .*site/ at (http://127\.0\.0\.1:(\d+)/) — Ctrl-C to stop")
    url, port = found.group(1), int(found.group(2))
    assert port != 0
    assert fetch(url + RECORD_PAGE.lstrip("/")) == 200
    assert fetch(url + BUNDLE_PAGE.lstrip("/")) == 404

    workspace.add(SEED_BUNDLE)
    poll(lambda: fetch(url + BUNDLE_PAGE.lstrip("/")) == 200)

    code, out, err = process.interrupt()
    assert code in (0, 130), err
    assert "Traceback" not in err and "Traceback" not in out
    assert "stopped" in err
    assert "first build -> published 1" in out
    assert not (workspace.site / "index.html").read_bytes().count(b"__pith-mirror")


def test_build_watch_rebuilds_until_ctrl_c(workspace: Workspace, running: list[Running]) -> None:
    workspace.add(SEED_RECORD)
    process = Running(
        ["build", "--watch", "--jobs", "1", str(workspace.content), str(workspace.site)], workspace.root
    )
    running.append(process)
    process.wait_for_line(r"first build -> published 1, refused 0 file\(s\)")
    process.wait_for_line(r"Watching .* Ctrl-C to stop")

    workspace.add(SEED_BUNDLE)
    # (created, or modified when a busy machine made the copy two rebuilds)
    process.wait_for_line(rf"content/{re.escape(SEED_BUNDLE.name)} (created|modified) -> published 2")
    assert (workspace.site / "pith" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.html").is_file()

    code, _out, err = process.interrupt()
    assert code in (0, 130), err
    assert "Traceback" not in err


@pytest.mark.parametrize("spelling", ["..", "."])
def test_a_content_folder_named_by_dots_is_rebuilt_once_a_change(
    workspace: Workspace, running: list[Running], spelling: str
) -> None:
    """The watcher named a new file 'content/x.json' and the build 'content/../x.json'
    ('/x.json' for '.'): the hinted build found nothing changed, and a second build,
    for a change "without an event", published the file."""
    workspace.add(SEED_RECORD)
    here = workspace.content / "sub" if spelling == ".." else workspace.content
    here.mkdir(exist_ok=True)
    process = Running(["build", "--watch", "--jobs", "1", spelling, str(workspace.site)], here)
    running.append(process)
    process.wait_for_line(r"Watching .* Ctrl-C to stop")

    workspace.add(SEED_BUNDLE)
    process.wait_for_line(
        rf"content/{re.escape(SEED_BUNDLE.name)} (created|modified) -> published 2, refused 0 file\(s\)"
    )
    code, out, err = process.interrupt()
    assert code in (0, 130), err
    assert "without an event" not in out + err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [["build", "--watch"], ["serve", "--port", "0", "--no-watch"]])
def test_clean_makes_the_first_build_a_full_one(
    workspace: Workspace, running: list[Running], command: list[str]
) -> None:
    """`--clean` is what the README offers when something looks stale: `serve`
    and `build --watch` must not answer it from the cache left by a build before."""
    workspace.add(SEED_RECORD)
    folders = [str(workspace.content), str(workspace.site)]
    subprocess.run([sys.executable, "-m", "generator", "build", *folders], cwd=workspace.root, check=True)
    process = Running([*command, "--clean", "--jobs", "1", *folders], workspace.root)
    running.append(process)
    process.wait_for_line(r"first build -> published 1, .*\(full: 1 record\(s\) rendered")
    code, _out, err = process.interrupt()
    assert code in (0, 130), err


def test_serve_reports_a_port_in_use_as_a_usage_error(workspace: Workspace, running: list[Running]) -> None:
    workspace.add(SEED_RECORD)
    first = Running(["serve", "--port", "0", "--jobs", "1", "--no-watch", "content", "site"], workspace.root)
    running.append(first)
    port = first.wait_for_line(r"http://127\.0\.0\.1:(\d+)/").group(1)
    second = subprocess.run(
        [sys.executable, "-m", "generator", "serve", "--port", port, "--jobs", "1", "content", "site2"],
        cwd=workspace.root,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert second.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
    assert "Traceback" not in second.stderr
    first.interrupt()


@pytest.mark.parametrize(
    ("site", "said"),
    [
        (".", "the content folder is inside the site folder"),
        ("elsewhere", "holds files but no .well-known/pith/mirror.json that pith-mirror wrote"),
    ],
    ids=["the-project-folder", "a-folder-pith-mirror-did-not-build"],
)
def test_serve_never_serves_a_folder_the_build_refuses(workspace: Workspace, site: str, said: str) -> None:
    """Served after a failed first build, the project folder gave out the mirror's
    private key and content/, and any folder named as SITE (/etc) its files."""
    workspace.add(SEED_RECORD)
    (workspace.root / "mirror-key.json").write_text('{"private_key_seed_b64": "secret"}')
    (workspace.root / "elsewhere").mkdir()
    (workspace.root / "elsewhere" / "passwd").write_text("root:x:0:0\n")
    result = subprocess.run(
        [sys.executable, "-m", "generator", "serve", "--port", "0", "--no-watch", "content", site],
        cwd=workspace.root,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 2, result.stdout
    assert said in result.stderr
    assert "Serving" not in result.stdout
    assert "Traceback" not in result.stderr


def _limited(*argv: str) -> list[str]:
    """argv run with no inotify instance to be had, as on a machine whose limit is used up
    (a user namespace of its own sets the limit without changing the machine's)."""
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", "echo 0 > /proc/sys/user/max_inotify_instances"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("cannot set an inotify limit in a user namespace here")
    script = 'echo 0 > /proc/sys/user/max_inotify_instances && exec "$@"'
    return [
        "unshare",
        "--user",
        "--map-root-user",
        "sh",
        "-c",
        script,
        "sh",
        sys.executable,
        "-m",
        "generator",
        *argv,
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", "0", "--jobs", "1", "content", "site"],
        ["build", "--watch", "--jobs", "1", "content", "site"],
    ],
    ids=["serve", "build-watch"],
)
def test_watching_beyond_the_inotify_limit_is_a_usage_error(workspace: Workspace, argv: list[str]) -> None:
    """It was a traceback from watchdog (OSError: inotify instance limit reached)."""
    workspace.add(SEED_RECORD)
    result = subprocess.run(
        _limited(*argv),
        cwd=workspace.root,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "pith-mirror: configuration: watch: cannot watch the inputs for changes (" in result.stderr
    assert "--no-watch" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "command", [["serve", "--port", "0"], ["build", "--watch"]], ids=["serve", "build-watch"]
)
def test_a_rebuild_that_would_unpublish_everything_keeps_the_last_site(
    workspace: Workspace, running: list[Running], command: list[str]
) -> None:
    """The content folder empties (an unmounted volume): the rebuild says what it would
    drop and the site stays; once the documents are back, rebuilding goes on."""
    workspace.add(SEED_RECORD)
    workspace.add(SEED_BUNDLE)
    process = Running([*command, "--jobs", "1", "content", "site"], workspace.root)
    running.append(process)
    process.wait_for_line(r"first build -> published 2")
    process.wait_for_line(r"Watching|Serving")
    page = workspace.site / "pith" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.html"
    before = page.read_bytes()
    for document in workspace.content.iterdir():
        document.unlink()
    poll(lambda: "is it mounted?" in "".join(process._errors))
    errors = "".join(process._errors)
    assert "would unpublish 2 of the 2 published record(s)" in errors
    assert "the previous site stays" in errors
    assert page.read_bytes() == before

    workspace.add(SEED_RECORD)
    workspace.add(SEED_BUNDLE)
    process.wait_for_line(r"created(, \d+ more)? -> published 2, refused 0 file\(s\)")
    code, out, err = process.interrupt()
    assert code in (0, 130), err
    assert "Traceback" not in out + err


def _documents(count: int) -> dict[str, bytes]:
    """`count` small bundles signed by the test key (pinned, with the real key, in keys.json)."""
    documents = {}
    for i in range(count):
        record = f.canonical_record(source_id=f"2112.{i:05d}", title=f"Paper number {i}")
        documents[f"b{i:03d}.json"] = f.to_bytes(f.bundle(record=record, title=f"Paper number {i}"))
    return documents


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["term", "int", "kill"]
)
@pytest.mark.parametrize(
    "command", [["build", "--watch"], ["serve", "--port", "0"]], ids=["build-watch", "serve"]
)
def test_no_process_outlives_the_command_stopped_during_a_rebuild(
    workspace: Workspace, running: list[Running], command: list[str], signum: int
) -> None:
    """Stopped while a rebuild's workers run (SIGTERM, Ctrl-C, or killed outright), the
    command leaves no process behind: SIGTERM of a rebuild left the forkserver, two
    pool workers and the resource tracker for good."""
    keys = workspace.root / "keys.json"
    pinned = json.loads((REPO / "generator" / "data" / "pinned-keys.json").read_bytes())
    keys.write_text(
        json.dumps([*(pinned if isinstance(pinned, list) else [pinned]), f.TEST_SIGNER.key_entry()])
    )
    workspace.add(SEED_RECORD)
    folders = [str(workspace.content), str(workspace.site)]
    process = Running(
        [*command, "--jobs", "2", "--keys", str(keys), *folders], workspace.root, new_session=True
    )
    running.append(process)
    process.wait_for_line(r"(Watching|Serving) .* Ctrl-C to stop")
    incoming = workspace.root / "incoming"
    incoming.mkdir()
    for name, data in _documents(120).items():
        (incoming / name).write_bytes(data)
    os.rename(incoming, workspace.content / "incoming")  # (one change: one rebuild, of 120 documents)
    poll(lambda: len(group_processes(process.process.pid)) > 2)  # (its workers are at work)
    code, _out, err = process.interrupt(signum)
    assert "Traceback" not in err
    if signum == signal.SIGTERM:
        assert code == 143, err
    elif signum == signal.SIGINT:
        assert code == 0, err
    if signum != signal.SIGKILL:
        assert err.rstrip().endswith(
            f"pith-mirror: stopped; {workspace.site} is as the last completed build left it"
        )
    wait_for_no_process(process.process.pid)
