"""Rebuild on change: real files, real watchdog events, the real server showing the result.

Each test starts from a first build, changes something on disk the way a user
or an editor would, and polls (bounded) until the served site shows it.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from generator.build.pipeline import build
from generator.build.report import BuildReport
from generator.build.write import lock_path
from generator.commands.watch import Counter, Rebuilder, describe
from generator.commands.watch_commands import Printer, interrupted_cleanly
from generator.commands.watching import Scope, Setup, load_setup
from generator.site.config import SiteConfig
from generator.trust.errors import BuildError
from generator.trust.keys import Keyring

from .conftest import (
    BUNDLE_PAGE,
    RECORD_PAGE,
    REPO,
    SEED_BUNDLE,
    SEED_RECORD,
    TIMEOUT,
    Preview,
    StrictTranscript,
    Workspace,
    poll,
    settled,
    tampered_bundle,
)

BUNDLE_NAME = SEED_BUNDLE.name


def rebuild_lines(workspace: Workspace) -> list[str]:
    """The one-line reports after the first build, in order."""
    return [line for line in workspace.out.text().splitlines() if "] " in line][1:]


def wait_for_line(workspace: Workspace, text: str) -> str:
    """The rebuild line containing `text` (it is printed just after the new site is swapped in)."""
    return str(poll(lambda: next((line for line in rebuild_lines(workspace) if text in line), None)))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), "utf-8")


def test_added_bundle_is_published_and_the_generation_moves(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    workspace.add(SEED_RECORD)
    running = preview()
    client, rebuilder = running.client, running.rebuilder
    assert rebuilder is not None
    assert client.status(RECORD_PAGE) == 200
    assert client.status(BUNDLE_PAGE) == 404
    before = rebuilder.generation

    workspace.add(SEED_BUNDLE)
    poll(lambda: client.status(BUNDLE_PAGE) == 200)
    wait_for_line(workspace, f"content/{BUNDLE_NAME} created -> published 2, refused 0 file(s)")
    assert rebuilder.generation > before
    assert json.loads(client.request("/__pith-mirror/generation").body)["generation"] == rebuilder.generation


def test_a_file_name_that_is_not_utf8_is_refused_and_watching_goes_on(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """Printed raw, the name ended the rebuild loop on a UTF-8 terminal; and spelled
    two ways (on disk, in the cache) it made every build look for a change again."""
    workspace.out, workspace.err = StrictTranscript(), StrictTranscript()
    workspace.add(SEED_RECORD)
    running = preview()
    client = running.client
    with open(os.fsencode(workspace.content) + b"/bad\xff.json", "wb") as handle:
        handle.write(b"{}")
    wait_for_line(workspace, "content/bad\\xff.json created -> published 1, refused 1 file(s)")
    workspace.place(SEED_BUNDLE)
    poll(lambda: client.status(BUNDLE_PAGE) == 200)
    wait_for_line(workspace, f"content/{BUNDLE_NAME} modified -> published 2, refused 1 file(s)")
    # A build that took the name for a change would be queued by now (the listing
    # after each report queues it): a later change shows whether one came between.
    workspace.place(b"{}", "sentinel.json")
    wait_for_line(workspace, "content/sentinel.json modified -> published 2, refused 2 file(s)")
    assert len(rebuild_lines(workspace)) == 3, rebuild_lines(workspace)
    assert "Traceback" not in workspace.err.text()


def test_template_change_changes_the_page(workspace: Workspace, preview: Callable[..., Preview]) -> None:
    workspace.add(SEED_RECORD)
    workspace.add(SEED_BUNDLE)
    client = preview().client
    assert b"CHANGED-RECORD-TEMPLATE" not in client.request(BUNDLE_PAGE).body

    edit(
        workspace.templates / "record.html",
        "{% block main %}",
        "{% block main %}<p>CHANGED-RECORD-TEMPLATE</p>",
    )
    poll(lambda: b"CHANGED-RECORD-TEMPLATE" in client.request(BUNDLE_PAGE).body)
    assert b"CHANGED-RECORD-TEMPLATE" in client.request(RECORD_PAGE).body
    assert b"CHANGED-RECORD-TEMPLATE" not in client.request("/report").body


def test_base_template_edit_shows_on_every_page(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    workspace.add(SEED_RECORD)
    workspace.add(SEED_BUNDLE)
    client = preview().client
    pages = ["/", RECORD_PAGE, BUNDLE_PAGE, "/report", "/browse", "/paper/GO43K6A5", "/no-such-page"]

    edit(workspace.templates / "base.html", "</footer>", "<p>EVERY-PAGE-MARKER</p></footer>")
    poll(lambda: b"EVERY-PAGE-MARKER" in client.request("/").body)
    for page in pages:
        assert b"EVERY-PAGE-MARKER" in client.request(page).body, page
    for file in workspace.site.rglob("*.html"):  # every page made from base.html (not the redirects)
        data = file.read_bytes()
        assert b"EVERY-PAGE-MARKER" in data or b"</footer>" not in data, file


def test_deleted_bundle_is_unpublished(workspace: Workspace, preview: Callable[..., Preview]) -> None:
    workspace.add(SEED_RECORD)
    bundle = workspace.add(SEED_BUNDLE)
    client = preview().client
    assert client.status(BUNDLE_PAGE) == 200

    bundle.unlink()
    poll(lambda: client.status(BUNDLE_PAGE) == 404)
    assert client.status(RECORD_PAGE) == 200
    wait_for_line(workspace, f"content/{BUNDLE_NAME} deleted -> published 1")


def test_each_rebuild_leaves_a_cache_another_process_can_use(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """Watching builds keep their cache in memory and write it after each
    rebuild, so a later `pith-mirror build` starts from it, not from scratch."""
    workspace.add(SEED_RECORD)
    rebuilder = preview().rebuilder
    assert rebuilder is not None
    cache_file = workspace.root / ".pith-cache" / "build-cache.json"
    first = cache_file.read_bytes()
    workspace.add(SEED_BUNDLE)
    wait_for_line(workspace, f"content/{BUNDLE_NAME} created -> published 2")
    rebuilder.stop()  # waits for the loop: the save follows the report line
    assert cache_file.read_bytes() != first
    report = build(workspace.config(), workspace.keyring)
    assert report.mode == "incremental" and report.rendered == 0 and report.published == 2


def test_half_written_file_is_refused_then_published_once_complete(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """A copy in progress is refused by the build it wakes; the rest of the copy wakes the next."""
    workspace.add(SEED_RECORD)
    client = preview().client
    data = SEED_BUNDLE.read_bytes()
    target = workspace.content / BUNDLE_NAME

    target.write_bytes(data[: len(data) // 2])
    poll(lambda: "json.invalid" in workspace.rejected_codes(f"content/{BUNDLE_NAME}"))
    assert client.status(BUNDLE_PAGE) == 404
    assert client.status(RECORD_PAGE) == 200

    with open(target, "ab") as handle:
        handle.write(data[len(data) // 2 :])
    poll(lambda: client.status(BUNDLE_PAGE) == 200)
    poll(lambda: workspace.report().get("rejections") == [])
    assert client.status(RECORD_PAGE) == 200


def test_bad_signature_is_reported_while_the_record_stays_served(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    workspace.add(SEED_RECORD)
    client = preview().client

    (workspace.content / "tampered.bundle.json").write_bytes(tampered_bundle())
    poll(lambda: "bundle.bad_signature" in workspace.rejected_codes("content/tampered.bundle.json"))
    served = client.request("/report.json")
    assert served.status == 200
    assert b"bundle.bad_signature" in served.body
    assert b"tampered.bundle.json" in client.request("/report.html").body
    assert b"tampered.bundle.json" in client.request("/report").body
    assert client.status(RECORD_PAGE) == 200
    assert client.status(BUNDLE_PAGE) == 404
    wait_for_line(workspace, "content/tampered.bundle.json created -> published 1, refused 1 file(s)")
    assert (
        "content/tampered.bundle.json: /bundle_signature/signature_b64: bundle.bad_signature"
        in workspace.err.text()
    )
    # (grouped by cause, as `build` prints them: the cause's count, sentence and hint)
    said = workspace.err.text()
    assert "  bundle.bad_signature: 1 file(s): the bundle signature does not verify" in said
    assert "    hint: the document was changed after the resolver signed it" in said


def test_bad_replacement_keeps_the_published_page(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """By design: a refused document for a published number leaves the published one in place."""
    workspace.add(SEED_RECORD)
    bundle = workspace.add(SEED_BUNDLE)
    client = preview().client
    page = client.request(BUNDLE_PAGE).body

    bundle.write_bytes(tampered_bundle())
    poll(lambda: "bundle.bad_signature" in workspace.rejected_codes(f"content/{BUNDLE_NAME}"))
    assert client.request(BUNDLE_PAGE).body == page


def test_editor_temporaries_do_not_trigger_builds(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    workspace.add(SEED_RECORD)
    running = preview()
    assert running.rebuilder is not None
    for name in (
        ".#x.bundle.json",
        "x.bundle.json~",
        "x.bundle.json.swp",
        "x.bundle.json.tmp",
        ".hidden.json",
    ):
        (workspace.content / name).write_bytes(b"{ half")
    (workspace.content / ".git").mkdir()
    (workspace.content / ".git" / "index.json").write_bytes(b"{}")

    workspace.add(SEED_BUNDLE)
    poll(lambda: running.client.status(BUNDLE_PAGE) == 200)
    # Had any temporary counted, it would show as an earlier rebuild or as "N more".
    wait_for_line(workspace, f"content/{BUNDLE_NAME} created -> published 2")
    assert len(rebuild_lines(workspace)) == 1
    assert workspace.report().get("rejections") == []


def test_the_build_does_not_wake_the_watcher(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder]
) -> None:
    """A build reads every input; reading must not count as a change, or it would loop forever.

    No wait for nothing to happen: a later change is built, and no build came
    between (a build woken by its own reads starts within the pause, before it)."""
    workspace.add(SEED_RECORD)
    rebuilder = start_rebuilder()
    workspace.place(SEED_BUNDLE)
    wait_for_line(workspace, f"content/{BUNDLE_NAME} modified -> published 2")
    workspace.place(b"{}", "sentinel.json")
    wait_for_line(workspace, "content/sentinel.json modified -> published 2, refused 1 file(s)")
    assert len(rebuild_lines(workspace)) == 2, rebuild_lines(workspace)
    assert rebuilder.rebuilds == 3


def test_a_complete_file_is_built_without_waiting_for_quiet(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder]
) -> None:
    """A file still open for writing waits for the quiet pause (here longer than
    the test); once it is closed, or when a file is renamed into place, the short
    settling pause is enough. The other deliberate wait for nothing: 1 s."""
    rebuilder = start_rebuilder(quiet=60.0, patience=120.0)
    with open(workspace.content / BUNDLE_NAME, "wb") as handle:
        handle.write(SEED_BUNDLE.read_bytes())
        handle.flush()
        assert not rebuilder.wait_for_rebuilds(2, 1.0)
    assert rebuilder.wait_for_rebuilds(2, TIMEOUT)
    wait_for_line(workspace, f"content/{BUNDLE_NAME} created -> published 1, refused 0")

    temporary = workspace.content / f"{SEED_RECORD.name}.tmp"  # (a name the build ignores)
    shutil.copyfile(SEED_RECORD, temporary)
    os.replace(temporary, workspace.content / SEED_RECORD.name)
    assert rebuilder.wait_for_rebuilds(3, TIMEOUT)
    wait_for_line(workspace, f"content/{SEED_RECORD.name} modified -> published 2, refused 0")


def test_unexpected_error_is_printed_and_the_loop_goes_on(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder]
) -> None:
    calls: list[int] = []

    def flaky(config: SiteConfig, keyring: Keyring) -> BuildReport:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom from a test")
        return build(config, keyring)

    workspace.add(SEED_RECORD)
    rebuilder = start_rebuilder(build=flaky)
    assert rebuilder.generation == 1

    workspace.place(SEED_BUNDLE)  # (one event: one rebuild, the one that fails)
    assert rebuilder.wait_for_rebuilds(2, TIMEOUT)
    errors = workspace.err.text()
    assert "unexpected error (a bug)" in errors
    assert "Traceback (most recent call last)" in errors
    assert "RuntimeError: boom from a test" in errors
    assert rebuilder.generation == 1
    assert rebuilder.running

    (workspace.content / BUNDLE_NAME).touch()
    assert rebuilder.wait_for_generation(2, TIMEOUT)
    assert (workspace.site / "pith" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.html").is_file()


def test_build_error_keeps_the_last_site_and_watching_resumes(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """The content folder vanishes (a BuildError), then comes back: the site stays, then follows."""
    workspace.add(SEED_RECORD)
    running = preview()
    assert running.rebuilder is not None
    shutil.rmtree(workspace.content)
    poll(lambda: "the content folder does not exist; the previous site stays" in workspace.err.text())
    assert running.client.status(RECORD_PAGE) == 200

    workspace.content.mkdir()
    workspace.add(SEED_RECORD)
    workspace.add(SEED_BUNDLE)
    poll(lambda: running.client.status(BUNDLE_PAGE) == 200)
    # The new folder is watched again: a later change still arrives.
    (workspace.content / BUNDLE_NAME).unlink()
    poll(lambda: running.client.status(BUNDLE_PAGE) == 404)


def test_settings_and_keys_are_read_again_when_they_change(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """A broken keys file is reported and the last good site stays; fixing it rebuilds; a new
    templates folder named in the settings file is used and watched from then on."""
    keys = workspace.root / "keys.json"
    shutil.copyfile(REPO / "generator" / "data" / "pinned-keys.json", keys)
    settings = workspace.root / "pith-mirror.toml"
    settings.write_text(
        'content = "content"\nsite = "site"\ntemplates = "templates"\nkeys = "keys.json"\njobs = 1\n'
    )
    workspace.add(SEED_RECORD)
    running = preview(load=lambda: load_setup(settings, {}, cwd=workspace.root))
    rebuilder, client = running.rebuilder, running.client
    assert rebuilder is not None and client.status(RECORD_PAGE) == 200

    good = keys.read_bytes()
    keys.write_bytes(b"{ not json")
    poll(lambda: "configuration: keys:" in workspace.err.text())
    assert client.status(RECORD_PAGE) == 200
    generation = rebuilder.generation
    keys.write_bytes(good)
    assert rebuilder.wait_for_generation(generation + 1, TIMEOUT)

    other = workspace.root / "templates2"
    shutil.copytree(workspace.templates, other)
    edit(other / "base.html", "</footer>", "<p>FROM-TEMPLATES-2</p></footer>")
    edit(settings, 'templates = "templates"', 'templates = "templates2"')
    poll(lambda: b"FROM-TEMPLATES-2" in client.request(RECORD_PAGE).body)
    assert rebuilder.setup.config.templates == other
    edit(other / "record.html", "{% block main %}", "{% block main %}<p>EDITED-IN-TEMPLATES-2</p>")
    poll(lambda: b"EDITED-IN-TEMPLATES-2" in client.request(RECORD_PAGE).body)


def test_a_settings_file_that_takes_over_is_noticed(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """Without --config, pith-mirror.toml comes before pyproject.toml: creating it
    changes the settings in use, and removing it again goes back to pyproject.toml."""
    folders = 'content = "content"\nsite = "site"\ntemplates = "templates"\njobs = 1\n'
    (workspace.root / "pyproject.toml").write_text(
        f'[tool.pith-mirror]\n{folders}site_title = "From Pyproject"\n'
    )
    workspace.add(SEED_RECORD)
    running = preview(load=lambda: load_setup(None, {}, cwd=workspace.root))
    assert b"From Pyproject" in running.client.request("/").body
    own = workspace.root / "pith-mirror.toml"
    own.write_text(f'{folders}site_title = "From Its Own File"\n')
    poll(lambda: b"From Its Own File" in running.client.request("/").body)
    own.unlink()
    poll(lambda: b"From Pyproject" in running.client.request("/").body)


def test_inputs_whose_folders_appear_later_are_built(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder]
) -> None:
    """The loop says it waits for a missing content folder: it must notice it
    appear, with the folder above it, and likewise a keys file's folder."""
    settings = workspace.root / "pith-mirror.toml"
    settings.write_text(
        'content = "data/content"\nsite = "site"\ntemplates = "templates"\nkeys = "keys/pinned.json"\n'
        "jobs = 1\n"
    )
    keys = workspace.root / "keys" / "pinned.json"
    keys.parent.mkdir()
    shutil.copyfile(REPO / "generator" / "data" / "pinned-keys.json", keys)
    rebuilder = start_rebuilder(load=lambda: load_setup(settings, {}, cwd=workspace.root))
    assert "waiting for it to appear" in workspace.err.text()
    generation = rebuilder.generation
    (workspace.root / "data" / "content").mkdir(parents=True)
    shutil.copyfile(SEED_RECORD, workspace.root / "data" / "content" / SEED_RECORD.name)
    poll(lambda: (workspace.site / RECORD_PAGE.lstrip("/")).with_suffix(".html").is_file())
    # (the page is swapped in before the build is reported and counted: wait for the count)
    assert rebuilder.wait_for_generation(generation + 1, TIMEOUT)

    def refusals() -> int:
        return workspace.err.text().count("configuration: keys:")

    shutil.rmtree(keys.parent)  # (a burst that may become more than one build, each refused)
    poll(lambda: refusals() >= 1)
    settled(rebuilder)
    generation, refused = rebuilder.generation, refusals()
    keys.parent.mkdir()  # a build now still finds no keys file, but watches its folder
    poll(lambda: refusals() > refused)
    settled(rebuilder)
    shutil.copyfile(REPO / "generator" / "data" / "pinned-keys.json", keys)
    assert rebuilder.wait_for_generation(generation + 1, TIMEOUT)


def test_stop_joins_every_thread(workspace: Workspace, real_keyring: Keyring) -> None:
    workspace.add(SEED_RECORD)
    rebuilder = Rebuilder(
        lambda: Setup(workspace.config(), real_keyring), on_report=Printer(workspace.out, workspace.err)
    )
    with rebuilder:
        assert rebuilder.running
    assert not rebuilder.running
    rebuilder.stop()  # a second stop is harmless
    assert not rebuilder.running


def test_scope_ignores_site_cache_and_temporaries(
    workspace: Workspace, real_keyring: Keyring, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    config = workspace.config(keys=keys, site=workspace.templates / "site")
    scope = Scope(Setup(config, real_keyring, (tmp_path / "pith-mirror.toml",)))
    content, templates = str(workspace.content), str(workspace.templates)
    assert scope.classify(os.path.join(content, "a.bundle.json")) == "content"
    assert scope.classify(os.path.join(content, "pages", "about.md")) == "content"
    assert scope.classify(os.path.join(templates, "base.html")) == "templates"
    assert scope.classify(str(keys)) == "keys"
    assert scope.classify(str(tmp_path / "pith-mirror.toml")) == "config"
    for ignored in (
        os.path.join(content, ".#a.json"),
        os.path.join(content, "a.json~"),
        os.path.join(content, "a.json.swp"),
        os.path.join(content, ".cache", "a.json"),
        os.path.join(templates, "site", "index.html"),
        os.path.join(templates, ".site.staging", "index.html"),
        str(workspace.root / ".pith-cache" / "x"),
        str(tmp_path / "other.toml"),
    ):
        assert scope.classify(ignored) is None, ignored


def test_describe_names_the_first_change_and_counts_the_rest() -> None:
    assert describe({"content/x.bundle.json": "modified"}) == "content/x.bundle.json modified"
    assert describe({"content/x.bundle.json": "modified", "templates/base.html": "created"}) == (
        "content/x.bundle.json modified, 1 more"
    )


def test_describe_names_the_file_saved_not_the_editors_temporary() -> None:
    """`sed -i` and editors that save through a temporary file rename it into place:
    the temporary's name is gone first, and the file saved is what changed."""
    changes = {"templates/sedld7neB": "deleted", "templates/base.html": "modified"}
    assert describe(changes) == "templates/base.html modified, 1 more"
    assert describe({"content/old.json": "deleted"}) == "content/old.json deleted"
    assert describe({"content/a\x07\udcff.json": "created"}) == "content/a\\x07\\xff.json created"


def test_counter_waits_are_bounded() -> None:
    counter = Counter()
    assert not counter.wait_for(1, 0.01)
    counter.bump()
    assert counter.wait_for(1, 0.01)


def test_build_error_at_first_build_is_reported_not_raised(
    workspace: Workspace, real_keyring: Keyring
) -> None:
    def failing(config: SiteConfig, keyring: Keyring) -> BuildReport:
        raise BuildError("site", "disk full (simulated)")

    rebuilder = Rebuilder(
        lambda: Setup(workspace.config(), real_keyring),
        build=failing,
        on_report=Printer(workspace.out, workspace.err),
    )
    assert rebuilder.rebuild() is False
    assert (
        "first build -> build failed: site: disk full (simulated); the previous site stays"
        in workspace.err.text()
    )
    assert (rebuilder.generation, rebuilder.rebuilds) == (0, 1)


def test_a_change_whose_event_was_lost_is_found_by_the_listing(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder]
) -> None:
    """A rebuild looks only at the files its events name; then every document
    is listed, and one that changed without an event (a full inotify queue drops
    them) is built at once, not at its next edit."""
    workspace.add(SEED_RECORD)
    rebuilder = start_rebuilder()
    real_note = rebuilder.watcher.on_change

    def lossy(path: str, verb: str, **options: bool) -> None:
        if os.path.basename(path) != BUNDLE_NAME:
            real_note(path, verb, **options)

    rebuilder.watcher.on_change = lossy
    workspace.add(SEED_BUNDLE)  # no event reaches the rebuilder
    (workspace.content / "other.json").write_bytes(b"{not json")  # this one does
    wait_for_line(workspace, f"content/{BUNDLE_NAME} changed without an event -> published 2")
    lines = rebuild_lines(workspace)
    assert lines[0].split("] ", 1)[1].startswith("content/other.json created -> published 1, refused 1")
    assert (workspace.site / "pith" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.html").is_file()


def test_a_folder_moved_in_is_listed_whole(workspace: Workspace, preview: Callable[..., Preview]) -> None:
    """A folder's files have no events of their own: the rebuild lists everything."""
    workspace.add(SEED_RECORD)
    client = preview().client
    outside = workspace.root / "incoming"
    outside.mkdir()
    shutil.copyfile(SEED_BUNDLE, outside / BUNDLE_NAME)
    os.rename(outside, workspace.content / "incoming")
    poll(lambda: client.status(BUNDLE_PAGE) == 200)
    assert "changed without an event" not in workspace.out.text()


def test_the_server_follows_a_new_site_folder_only_once_a_build_there_completes(
    workspace: Workspace, preview: Callable[..., Preview]
) -> None:
    """Settings naming a folder the build refuses (it holds other files) must not move
    the server there: it would serve that folder, whatever it is, in place of the site."""
    settings = workspace.root / "pith-mirror.toml"
    settings.write_text('content = "content"\nsite = "site"\ntemplates = "templates"\njobs = 1\n')
    workspace.add(SEED_RECORD)
    running = preview(load=lambda: load_setup(settings, {}, cwd=workspace.root))
    rebuilder, client = running.rebuilder, running.client
    assert rebuilder is not None and client.status(RECORD_PAGE) == 200
    other = workspace.root / "other"
    other.mkdir()
    (other / "notes.txt").write_text("private notes")
    edit(settings, 'site = "site"', 'site = "other"')
    poll(lambda: "build failed:" in workspace.err.text())
    assert client.status("/notes.txt") == 404
    assert client.status(RECORD_PAGE) == 200
    generation = rebuilder.generation
    edit(settings, 'site = "other"', 'site = "fresh"')
    assert rebuilder.wait_for_generation(generation + 1, TIMEOUT)
    poll(lambda: client.status(RECORD_PAGE) == 200 and running.server.site == workspace.root / "fresh")


def test_ctrl_c_during_a_build_says_it_waits_for_it(workspace: Workspace, real_keyring: Keyring) -> None:
    """A build is let finish so the site stays whole; the wait is said, not silent."""
    started, release = threading.Event(), threading.Event()

    def slow(config: SiteConfig, keyring: Keyring) -> BuildReport:
        started.set()
        release.wait(TIMEOUT)
        return build(config, keyring)

    rebuilder = Rebuilder(
        lambda: Setup(workspace.config(), real_keyring),
        build=slow,
        on_report=Printer(workspace.out, workspace.err),
    )
    building = threading.Thread(target=rebuilder.rebuild)
    building.start()
    assert started.wait(TIMEOUT)
    said = io.StringIO()
    threading.Timer(0.2, release.set).start()
    assert interrupted_cleanly(rebuilder, said) == 0
    building.join(TIMEOUT)
    assert said.getvalue().splitlines() == [
        "pith-mirror: stopping once the build in progress is done (Ctrl-C again to stop at once;"
        " the next build clears what it leaves)",
        f"pith-mirror: stopped; {workspace.site} is as the last completed build left it",
    ]


def test_a_rebuild_that_meets_another_builds_lock_waits_for_it(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder]
) -> None:
    """A `pith-mirror build` writing the site when a change arrives: the rebuild says
    it waits, tries again until the lock is free, then builds. (It was refused, and
    the change stayed unbuilt until the next one.)"""
    workspace.add(SEED_RECORD)
    rebuilder = start_rebuilder()
    generation = rebuilder.generation
    held = os.open(lock_path(workspace.site), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # (as another build holds it)
        workspace.place(SEED_BUNDLE)
        poll(lambda: "waiting: another pith-mirror command is using" in workspace.err.text())
        assert rebuilder.generation == generation and not rebuilder.idle
    finally:
        os.close(held)
    assert rebuilder.wait_for_generation(generation + 1, TIMEOUT)
    assert (workspace.site / "pith" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.html").is_file()
    assert workspace.err.text().count("waiting:") == 1
    assert "build failed" not in workspace.err.text()
