"""What the repository pins, read from its files (no network, nothing imported from the package): every locked
distribution, every Helm chart and container image the catalog pins, the Dockerfiles' base images and tools, and
the vendored tables with the release they were read from.

The catalog is read by parsing its sources (``*charts.py`` and the image constants), so this works wherever the
catalog lives (``catalog/`` or a top-level ``catalog/``) and before the package is installed.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from tools.lock import COMMITTED
from tools.lockfile import read_lock

REPO = Path(__file__).resolve().parents[2]
CATALOG_DIRS = ("catalog", "catalog")


@dataclass(frozen=True)
class Distribution:
    name: str
    versions: tuple[str, ...]
    """Every version some lock pins (two under different markers, or two locks for two environments)."""
    locks: tuple[str, ...]


@dataclass(frozen=True)
class ChartPin:
    constant: str
    chart: str
    version: str
    repository: str | None
    """A Helm repository URL, or None for an ``oci://`` chart reference."""
    path: str


@dataclass(frozen=True)
class ImagePin:
    what: str
    image: str
    """``registry/repository`` (``docker.io/library/python`` for Docker Hub's official images)."""
    tag: str
    path: str
    same_line: bool = False
    """Only a newer release of the same ``major.minor`` line is an update (a per-Kubernetes-minor table)."""


@dataclass(frozen=True)
class ToolPin:
    what: str
    version: str
    path: str
    source: str
    """Where the newest release is published (a URL answering the version as text), or "" when nowhere is."""
    why_unchecked: str = ""


@dataclass(frozen=True)
class TablePin:
    what: str
    distribution: str
    read_at: str
    path: str
    how: str


@dataclass
class Pins:
    distributions: list[Distribution] = field(default_factory=list)
    charts: list[ChartPin] = field(default_factory=list)
    images: list[ImagePin] = field(default_factory=list)
    tools: list[ToolPin] = field(default_factory=list)
    tables: list[TablePin] = field(default_factory=list)


def distributions(repo: Path = REPO) -> list[Distribution]:
    found: dict[str, tuple[list[str], list[str]]] = {}
    for lock in COMMITTED:
        path = repo / lock.path.relative_to(lock.path.parents[1])
        for pin in read_lock(path):
            versions, locks = found.setdefault(pin.name, ([], []))
            if pin.version not in versions:
                versions.append(pin.version)
            if lock.name not in locks:
                locks.append(lock.name)
    return [Distribution(n, tuple(v), tuple(lk)) for n, (v, lk) in sorted(found.items())]


def catalog_dir(repo: Path = REPO) -> Path:
    for rel in CATALOG_DIRS:
        if (repo / rel / "charts.py").is_file():
            return repo / rel
    raise FileNotFoundError(f"no catalog with charts.py under {repo} ({', '.join(CATALOG_DIRS)})")


def _constants(path: Path) -> dict[str, ast.expr]:
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    return found


def charts(repo: Path = REPO) -> list[ChartPin]:
    """Every ``NAME = Chart("chart", "version", "repository")`` of the catalog's ``*charts.py``."""
    found = []
    for path in sorted(catalog_dir(repo).glob("*charts.py")):
        for name, value in _constants(path).items():
            if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Chart":
                args = [ast.literal_eval(a) for a in value.args]
                args += [None] * (3 - len(args))
                chart, version, repository = args[:3]
                found.append(ChartPin(name, chart, version, repository, path.relative_to(repo).as_posix()))
    return found


IMAGE_REFERENCE = re.compile(r"^(?P<image>[a-z0-9.-]+\.[a-z]+(?::\d+)?/[a-z0-9._/-]+):(?P<tag>[A-Za-z0-9._-]+)$")


def images(repo: Path = REPO) -> list[ImagePin]:
    """The catalog's image references (``registry/name:tag`` constants, the Cluster Autoscaler's per-minor tags,
    LeaderWorkerSet's tag) and the Dockerfiles' base images (their ``*_TAG`` ARG defaults)."""
    found = []
    catalog = catalog_dir(repo)
    for path in sorted(catalog.glob("*.py")):
        rel = path.relative_to(repo).as_posix()
        constants = _constants(path)
        for name, value in constants.items():
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                match = IMAGE_REFERENCE.match(value.value)
                if match:
                    found.append(ImagePin(name, match["image"], match["tag"], rel))
        if "CLUSTER_AUTOSCALER_TAGS" in constants:
            image = ast.literal_eval(constants["CLUSTER_AUTOSCALER_IMAGE"])
            for minor, tag in ast.literal_eval(constants["CLUSTER_AUTOSCALER_TAGS"]).items():
                found.append(ImagePin(f"CLUSTER_AUTOSCALER_TAGS[{minor!r}]", image, tag, rel, same_line=True))
        if "LEADER_WORKER_SET_IMAGE_TAG" in constants:
            tag = ast.literal_eval(constants["LEADER_WORKER_SET_IMAGE_TAG"])
            found.append(ImagePin("LEADER_WORKER_SET_IMAGE_TAG", "registry.k8s.io/lws/lws", tag, rel))
    for dockerfile, image, arg in (
        ("inference_image/Dockerfile", "nvcr.io/nvidia/tritonserver", "TRITON_TAG"),
        ("batch/Dockerfile", "docker.io/library/python", "PYTHON_TAG"),
        ("inference_image/verification/Dockerfile", "docker.io/library/python", "PYTHON_TAG"),
    ):
        tag = dockerfile_args(repo / dockerfile)[arg]
        found.append(ImagePin(f"ARG {arg}", image, tag, dockerfile))
    # ubuntu:22.04 in Dockerfile.neuron is pinned by a required digest argument, not a tag default: nothing to compare.
    return found


def dockerfile_args(path: Path) -> dict[str, str]:
    return dict(re.findall(r"^ARG ([A-Z0-9_]+)=(\S+)$", path.read_text(), re.MULTILINE))


def tools(repo: Path = REPO) -> list[ToolPin]:
    args = dockerfile_args(repo / "inference_image" / "Dockerfile")
    return [
        ToolPin("kubectl (inference_image/Dockerfile KUBECTL_VERSION)", args["KUBECTL_VERSION"],
                "inference_image/Dockerfile", "https://dl.k8s.io/release/stable.txt"),
        ToolPin("EFA installer (inference_image/Dockerfile EFA_INSTALLER_VERSION)", args["EFA_INSTALLER_VERSION"],
                "inference_image/Dockerfile", "",
                "AWS publishes the installer's releases only as a documentation page, no machine-readable list"),
    ]  # fmt: skip


def tables(repo: Path = REPO) -> list[TablePin]:
    """The vendored tables and the PyPI release each was read from."""
    from tools.deps_check.facts import FACTS

    catalog = catalog_dir(repo)
    offerings = json.loads((catalog / "instance_offerings.json").read_text())["source"]
    found = [
        TablePin(
            "instance offerings per zone",
            offerings["package"],
            offerings["version"],
            (catalog / "instance_offerings.json").relative_to(repo).as_posix(),
            "python -m inference_platform.<catalog>.offerings_refresh re-vendors it from the installed moto",
        )
    ]
    for fact in FACTS:
        if fact.kind == "pypi":
            found.append(TablePin(f"facts read from {fact.name}", fact.name, fact.read_at, fact.files[0], fact.reread))
    return found


def read(repo: Path = REPO) -> Pins:
    return Pins(distributions(repo), charts(repo), images(repo), tools(repo), tables(repo))
