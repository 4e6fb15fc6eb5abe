"""`make deps-check` (tools/deps_check) on recorded upstream answers: no network, the same result any day.

PyPI's answers are real ones trimmed to the fields the tool reads (tests/data/deps_check/pypi_*.json); the Helm
index and the OCI registry flow follow their specifications' shapes, since those hosts are unreachable from here.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from tools.deps_check import pins, report, upstream
from tools.deps_check.__main__ import main
from tools.deps_check.facts import FACTS
from tools.lock import COMMITTED
from tools.lockfile import read_lock

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "deps_check"
DOCKER = json.loads((DATA / "oci_docker_hub.json").read_text())


class Recorded:
    """A ``Fetch`` that answers from the recordings, and for other PyPI names the release the locks pin."""

    def __init__(self, pypi_newest: Mapping[str, str] | None = None, unreachable: tuple[str, ...] = ()) -> None:
        self.pypi_newest = dict(pypi_newest or {})
        self.unreachable = unreachable
        self.asked: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: Mapping[str, str]) -> bytes:
        self.asked.append((url, dict(headers)))
        if any(url.startswith(u) for u in self.unreachable):
            raise upstream.Unreachable(f"{url}: [Errno -2] Name or service not known")
        if match := re.fullmatch(r"https://pypi\.org/pypi/([^/]+)/json", url):
            name = match[1]
            if (DATA / f"pypi_{name}.json").is_file():
                return (DATA / f"pypi_{name}.json").read_bytes()
            version = self.pypi_newest.get(name) or _locked()[name]
            return json.dumps({"releases": {version: [{"yanked": False}]}}).encode()
        if url == "https://kedacore.github.io/charts/index.yaml":
            return (DATA / "helm_kedacore_index.yaml").read_bytes()
        if url.startswith("https://registry-1.docker.io/v2/library/redis/tags/list"):
            if headers.get("Authorization") != "Bearer t0ken":
                raise upstream.Unreachable(f"{url}: HTTP 401", DOCKER["challenge"])
            return json.dumps(DOCKER["tags"]).encode()
        if url.startswith("https://auth.docker.io/token?"):
            assert "scope=repository%3Alibrary%2Fredis%3Apull" in url and "service=registry.docker.io" in url
            return json.dumps(DOCKER["token"]).encode()
        raise upstream.Unreachable(f"{url}: not recorded")


@functools.cache
def _locked() -> dict[str, str]:
    found: dict[str, str] = {}
    for lock in COMMITTED:
        for pin in read_lock(lock.path):
            found.setdefault(pin.name, pin.version)
    return found


def test_pypi_newest_final_release_skips_prereleases():
    assert upstream.pypi_latest("botocore", Recorded()) == "1.44.18"


def test_pypi_a_distribution_with_only_prereleases_answers_its_newest():
    assert upstream.pypi_latest("opentelemetry-instrumentation", Recorded()) == "0.66b2"


def test_helm_index_newest_final_version():
    assert upstream.helm_latest("https://kedacore.github.io/charts", "keda", Recorded()) == "2.20.3"
    with pytest.raises(upstream.Unreachable, match="lists no chart nope"):
        upstream.helm_latest("https://kedacore.github.io/charts", "nope", Recorded())


def test_oci_tags_take_an_anonymous_token_when_the_registry_asks():
    get = Recorded()
    tags = upstream.oci_tags("docker.io/library/redis", get)
    assert "7.4.6-alpine" in tags and [u.split("?")[0] for u, _ in get.asked] == [
        "https://registry-1.docker.io/v2/library/redis/tags/list",
        "https://auth.docker.io/token",
        "https://registry-1.docker.io/v2/library/redis/tags/list",
    ]


def test_newer_tags_keep_the_shape_and_optionally_the_line():
    tags = DOCKER["tags"]["tags"]
    assert upstream.newer_tags("7.4.5-alpine", tags) == ["7.4.6-alpine", "8.2.1-alpine"]
    assert upstream.newer_tags("7.4.5-alpine", tags, same_line=True) == ["7.4.6-alpine"]
    assert upstream.newer_tags("v1.36.1", ["v1.36.2", "v1.37.0", "1.36.3", "v1.36.2-rc.0"], same_line=True) == [
        "v1.36.2"
    ]


def test_the_repository_pins_are_all_found():
    found = pins.read()
    catalog = pins.catalog_dir()
    calls = sum(
        isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Chart"
        for path in catalog.glob("*charts.py")
        for n in ast.walk(ast.parse(path.read_text()))
    )
    assert len(found.charts) == calls and {"keda", "oci://docker.io/envoyproxy/gateway-helm"} <= {
        c.chart for c in found.charts
    }
    names = {d.name for d in found.distributions}
    assert {"botocore", "moto", "pip", "setuptools", "uv", "checkov", "nvidia-pytriton"} <= names
    images = {(i.image, i.tag) for i in found.images}
    assert ("nvcr.io/nvidia/tritonserver", "26.07-trtllm-python-py3") in images
    assert ("docker.io/library/python", "3.11-slim-bookworm") in images
    assert ("docker.io/library/redis", "7.4.5-alpine") in images
    assert sum(i.same_line for i in found.images) == 5  # the Cluster Autoscaler's tag per Kubernetes minor
    assert {t.distribution for t in found.tables} >= {"moto", "botocore"}


def test_all_current_is_exit_0_when_every_source_answers():
    small = pins.Pins(distributions=[pins.Distribution("botocore", ("1.44.18",), ("locks/app.txt",))])
    built = report.build(small, Recorded())
    assert [r.status for r in built.rows] == ["current"] and built.exit_code == report.ALL_CURRENT


def test_updates_are_exit_1_and_name_the_facts_to_reread():
    built = (
        report.build(
            pins.read(),
            Recorded(),
        )
        if False
        else None
    )
    repo_pins = pins.read()
    reachable = pins.Pins(distributions=repo_pins.distributions, tables=repo_pins.tables,
                          charts=[c for c in repo_pins.charts if c.chart == "keda"],
                          images=[i for i in repo_pins.images if i.image == "docker.io/library/redis"])  # fmt: skip
    built = report.build(reachable, Recorded())
    updates = {(r.kind, r.name): r.newest for r in built.rows if r.status == "update"}
    assert updates[("pypi", "botocore")] == "1.44.18" and updates[("chart", "keda")] == "2.20.3"
    assert updates[("image", "docker.io/library/redis")] == "8.2.1-alpine"
    assert built.exit_code == report.UPDATES and all(r.status != "not checked" for r in built.rows)
    moved = {f.name: newest for f, newest in built.facts}
    assert moved["botocore"] == "1.44.18" and moved["keda"] == "2.20.3"
    text = report.render(built)
    assert "pypi:botocore read at 1.44.8, newest 1.44.18" in text and "tests/policies/test_name_rules.py" in text
    assert text.endswith("updates available (exit 1)")


def test_an_unreachable_source_is_not_checked_never_current():
    repo_pins = pins.read()
    built = report.build(repo_pins, Recorded(unreachable=("https://kedacore.github.io",)))
    rows = {r.name: r for r in built.rows if r.kind == "chart"}
    assert rows["keda"].status == "not checked" and "Name or service not known" in rows["keda"].why
    # Every chart, image and tool whose source is not recorded here is "not checked" too, never "current".
    assert all(r.status == "not checked" for r in built.rows if r.kind in ("chart", "image", "tool") and not r.newest)
    assert built.exit_code == report.NOT_CHECKED
    assert "keda 2.20.2: not checked: https://kedacore.github.io/charts/index.yaml" in report.render(built)


def test_the_json_output_and_exit_code(monkeypatch, capsys):
    recorded = Recorded()
    monkeypatch.setattr(upstream, "fetch", recorded)
    code = main(["--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == out["exit"] == report.NOT_CHECKED  # most charts' and images' sources are not recorded
    assert {f["name"] for f in out["facts"]} == {"botocore", "keda"}  # the recorded newer releases
    assert recorded.asked, "the recorded answers, never the network"


def test_every_pinned_fact_of_a_chart_names_a_chart_the_catalog_pins():
    charts = {c.chart.rsplit("/", 1)[-1] for c in pins.charts()}
    assert [f.name for f in FACTS if f.kind == "chart" and f.name not in charts] == []


def test_make_test_never_runs_deps_check():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "deps-check" not in recipe and "deps_check" not in recipe
