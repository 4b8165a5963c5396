"""The GitHub Pages workflow: valid YAML, the official actions, the right permissions and steps."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from netkit import http_server

from .conftest import CONTENT, REPO

WORKFLOW = REPO / ".github" / "workflows" / "pages.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return list(workflow["jobs"][job]["steps"])


def uses(workflow: dict[str, Any], job: str) -> list[str]:
    return [s["uses"] for s in steps(workflow, job) if "uses" in s]


def step_using(workflow: dict[str, Any], job: str, action: str) -> dict[str, Any]:
    found = [s for s in steps(workflow, job) if s.get("uses", "").split("@")[0] == action]
    assert len(found) == 1, f"{job} uses {action} {len(found)} times"
    return found[0]


def test_triggers(workflow: dict[str, Any]) -> None:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert set(on) == {"push", "workflow_dispatch"}
    paths = on["push"]["paths"]
    for wanted in ("content/**", "templates/**", "pith-mirror.toml", "pyproject.toml"):
        assert wanted in paths
    condition = workflow["jobs"]["build"]["if"]
    assert "github.event.repository.default_branch" in condition and "workflow_dispatch" in condition


def test_official_actions_only(workflow: dict[str, Any]) -> None:
    build = [u.split("@")[0] for u in uses(workflow, "build")]
    assert build == [
        "actions/checkout",
        "actions/setup-python",
        "actions/configure-pages",
        "actions/upload-pages-artifact",
    ]
    assert [u.split("@")[0] for u in uses(workflow, "deploy")] == ["actions/deploy-pages"]
    for job in ("build", "deploy"):
        for used in uses(workflow, job):
            assert "@v" in used, f"{used} is not pinned to a major version"


def test_hidden_files_reach_the_artifact(workflow: dict[str, Any]) -> None:
    """upload-pages-artifact drops dot-paths since v4; v5 added include-hidden-files."""
    upload = step_using(workflow, "build", "actions/upload-pages-artifact")
    major = int(upload["uses"].split("@v")[1].split(".")[0])
    assert major >= 5
    assert upload["with"]["path"] == "site"
    assert upload["with"]["include-hidden-files"] is True
    check = steps(workflow, "build")[steps(workflow, "build").index(upload) + 1]
    assert "./.well-known/pith/mirror.json" in check["run"]


def test_permissions(workflow: dict[str, Any]) -> None:
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    build = workflow["jobs"]["build"]["permissions"]
    assert build.get("pages") in (None, "read") and "id-token" not in build
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"
    assert "steps.deployment.outputs.page_url" in deploy["environment"]["url"]


def test_build_steps(workflow: dict[str, Any]) -> None:
    python = step_using(workflow, "build", "actions/setup-python")
    assert str(python["with"]["python-version"]) == "3.11"
    pages = step_using(workflow, "build", "actions/configure-pages")
    assert pages["id"] == "pages"
    runs = [s.get("run", "") for s in steps(workflow, "build")]
    assert any(r.strip() == "pip install ." for r in runs)
    build = next(s for s in steps(workflow, "build") if s.get("id") == "build")
    assert build["env"]["BASE_URL"] == "${{ steps.pages.outputs.base_url }}/"
    assert 'pith-mirror build --base-url "$BASE_URL" "${deployed[@]}" || status=$?' in build["run"]
    assert "GITHUB_STEP_SUMMARY" in build["run"] and "refused=true" in build["run"]
    order = [i for i, r in enumerate(runs) if "pith-mirror checksums site" in r]
    upload = steps(workflow, "build").index(step_using(workflow, "build", "actions/upload-pages-artifact"))
    assert order and order[0] < upload and steps(workflow, "build").index(build) < order[0]


def test_refusals_fail_the_run_after_deploying(workflow: dict[str, Any]) -> None:
    assert workflow["jobs"]["build"]["outputs"]["refused"] == "${{ steps.build.outputs.refused }}"
    deploy_steps = steps(workflow, "deploy")
    assert deploy_steps[0]["uses"].startswith("actions/deploy-pages@")
    last = deploy_steps[-1]
    assert last["if"] == "needs.build.outputs.refused == 'true'"
    assert "exit 1" in last["run"]


def test_the_run_summary_lists_each_refusal(
    workflow: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build step's own script, run on a report with a whole-file refusal and a pointed one."""
    build = next(s for s in steps(workflow, "build") if s.get("id") == "build")
    script = textwrap.dedent(build["run"].split("python - <<'PY'\n", 1)[1].split("\nPY\n", 1)[0])
    (tmp_path / "site").mkdir()
    rejections = [
        {"file": "content/a.json", "pointer": "", "code": "json.invalid", "message": "line 1: oops"},
        {"file": "content/b.json", "pointer": "/events/0", "code": "sig.invalid", "message": "a|b"},
    ]
    report = {"summary": {"published": 2, "refused_files": 2}, "rejections": rejections, "notes": []}
    (tmp_path / "site" / "report.json").write_text(json.dumps(report), "utf-8")
    summary = tmp_path / "summary.md"
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "::error file=content/a.json,title=refused%3A json.invalid::line 1: oops",
        "::error file=content/b.json,title=refused%3A sig.invalid::/events/0: a|b",
    ]
    table = summary.read_text("utf-8")
    assert "| content/a.json | the whole file | json.invalid | line 1: oops |" in table
    assert "| content/b.json | /events/0 | sig.invalid | a\\|b |" in table
    assert "Published **2** record(s); refused **2** file(s)." in table


def test_an_optional_pull_of_a_list_file_before_the_build(workflow: dict[str, Any]) -> None:
    names = [s.get("name", "") for s in steps(workflow, "build")]
    pull = next(s for s in steps(workflow, "build") if s.get("name", "").startswith("Pull the papers"))
    assert names.index(pull["name"]) < next(i for i, n in enumerate(names) if n.startswith("Build"))
    assert pull["if"] == "hashFiles('pith-mirror-pull.txt') != ''"
    assert "pith-mirror pull --list pith-mirror-pull.txt" in pull["run"]
    assert 'if [ "$status" -ge 2 ]' in pull["run"]  # (a usage error stops the run; a refusal does not)


@contextlib.contextmanager
def pages_host(folder: Path, broken: bool = False) -> Iterator[str]:
    """A static host on loopback serving `folder` (every answer a 500 when `broken`)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if broken:
                self.send_error(500)
            else:
                super().do_GET()

        def log_message(self, *_args: Any) -> None:
            pass

    with http_server(functools.partial(Handler, directory=folder)) as url:
        yield f"{url}/"


@pytest.mark.parametrize(
    ("deployed", "documents", "broken", "status", "says"),
    [
        (True, False, False, 2, "is it mounted?"),
        (True, True, False, 0, ""),
        (False, False, False, 0, "no mirror is deployed at"),
        (True, True, True, 2, "answered 500; nothing was deployed"),
    ],
    ids=["empty-content", "all-kept", "first-deployment", "host-error"],
)
def test_the_build_step_refuses_to_unpublish_the_deployed_mirror(
    workflow: dict[str, Any],
    tmp_path: Path,
    built_site: Path,
    deployed: bool,
    documents: bool,
    broken: bool,
    status: int,
    says: str,
) -> None:
    """The build step's shell part, run with the real command against a real host holding
    the deployed mirror: an empty content/ fails the job (exit 2) before anything is deployed."""
    build = next(s for s in steps(workflow, "build") if s.get("id") == "build")
    script = build["run"].split("python - <<'PY'\n", 1)[0] + 'echo "status=$status"\n'
    served = tmp_path / "host"
    if deployed:
        shutil.copytree(built_site, served)
    else:
        served.mkdir()
    project = tmp_path / "project"
    (project / "content").mkdir(parents=True)
    if documents:
        for document in CONTENT.glob("*.json"):
            shutil.copyfile(document, project / "content" / document.name)
    with pages_host(served, broken) as url:
        env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
        env |= {
            "BASE_URL": url,
            "RUNNER_TEMP": str(tmp_path),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == status, done
    assert says in done.stdout + done.stderr
    if status == 2:
        assert not (project / "site").exists()
        assert "::error title=" in done.stdout
    else:
        assert "status=0" in done.stdout
        assert (project / "site" / "index.html").is_file()
