"""``helm-charts-pinned``: every Helm chart a stack installs comes from a repository at one exact version,
whichever way it is installed: ``kubernetes:helm.sh/v3:Release``, ``kubernetes:helm.sh/v4:Chart`` (a
component the provider expands; its inputs are what the pack sees) or ``kubernetes:helm.sh/v3:Chart``.

- The chart is a name in ``repositoryOpts.repo`` (``https://`` or ``oci://``) or a full ``oci://`` reference,
  with ``version`` an exact version (no range such as ``^1.2``, ``~1``, ``>=1``, ``1.x``, ``*``; never unset,
  which installs whatever is newest when the update runs), as ``catalog`` pins every chart.
- A local path (``./chart``, ``/abs``, ``file://``) or an archive (``.tgz``, ``.tar.gz``, also by URL) is
  refused: what it installs is whatever the machine running ``pulumi up`` has there, not a pinned chart.
- ``helm.v3.Chart`` registers with no inputs (it renders client-side), so its source cannot be judged: it is
  refused; install the chart as a ``helm.v3.Release`` or ``helm.v4.Chart``.
"""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

RELEASE = "kubernetes:helm.sh/v3:Release"
CHART_V4 = "kubernetes:helm.sh/v4:Chart"
CHART_V3 = "kubernetes:helm.sh/v3:Chart"
HELM_INSTALLS = (RELEASE, CHART_V4)
"""The Helm resources whose chart and values the pack can read (rules on releases judge both)."""
_EXACT_VERSION = re.compile(r"^v?\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_ARCHIVE = (".tgz", ".tar.gz")
_LOCAL_PREFIXES = ("./", "../", "/", "~", "file://")
_REPO_SCHEMES = ("https://", "oci://")


def _source_problem(props: Any) -> str | None:
    chart = str(get(props, "chart") or "")
    repo = str(get(props, "repositoryOpts.repo") or "")
    if not chart:
        return "names no chart"
    if chart.endswith(_ARCHIVE) or repo.endswith(_ARCHIVE):
        return f"installs the archive {chart if chart.endswith(_ARCHIVE) else repo}, not a pinned repository chart"
    if chart.startswith(_LOCAL_PREFIXES) or repo.startswith(_LOCAL_PREFIXES):
        return f"installs a local path ({chart if chart.startswith(_LOCAL_PREFIXES) else repo}), not a repository chart"
    if chart.startswith("oci://"):
        return None
    if not repo:
        # "repo/chart" names a repository only `helm repo add` on the running machine knows; a bare name with
        # neither repository nor path is read as a directory by Helm.
        return f"chart {chart} has no repositoryOpts.repo: it resolves on the machine running pulumi up"
    if not repo.startswith(_REPO_SCHEMES):
        return f"repositoryOpts.repo {repo} is not an https:// or oci:// repository"
    return None


def _pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == CHART_V3:
        report(
            "helm.v3.Chart registers no inputs: its chart source and version cannot be checked; install it as a "
            "helm.v3.Release or helm.v4.Chart from a repository at an exact version"
        )
        return
    if args.resource_type not in HELM_INSTALLS:
        return
    problem = _source_problem(args.props)
    if problem:
        report(problem)
    chart = str(get(args.props, "chart") or "")
    if chart.endswith(_ARCHIVE) or chart.startswith(_LOCAL_PREFIXES):
        return  # the version of a local chart is whatever its Chart.yaml says: the source is the problem
    version = get(args.props, "version")
    if not version:
        report("version is unset: the newest chart at the time of the update is installed")
    elif not _EXACT_VERSION.match(str(version)):
        report(f"version {version!r} is a range, not one exact chart version")


POLICIES = [
    ResourceValidationPolicy(
        name="helm-charts-pinned",
        description="Helm releases and charts (v3 Release, v4 Chart) install a repository chart at one exact "
        "version; no local paths, archives or helm.v3.Chart.",
        validate=_pinned,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
