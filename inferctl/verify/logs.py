"""Are the serving logs clean since the rollout? Locally from the server's log file; in the cluster
from the Kubernetes API (container restarts, OOMKilled terminations, ERROR/OOM lines in pod logs).

The cluster path takes any object with the ``CoreV1Api`` methods it calls (``list_namespaced_pod``,
``read_namespaced_pod_log``), so it is exercised here with a fake API object: no API server runs on
this machine. ``kubernetes_api()`` builds the real client (in-cluster config, else kubeconfig).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Triton logs with glog prefixes: E<MMDD> for errors, F<MMDD> for fatal. Python backends and the
# kernel's OOM killer write plain words.
PROBLEM_LINE = re.compile(
    r"^(?:[EF]\d{4} \d{2}:\d{2}:\d{2})|\bERROR\b|\bOOM\b|[Oo]ut of memory|OOMKilled|CUDA error|Traceback \(most recent",
)
MAX_SHOWN = 5


@dataclass
class LogReport:
    source: str
    checked: bool = True
    """False when the source could not be read (the verdict says so; it is not a pass)."""
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.checked and not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "checked": self.checked, "problems": self.problems, "notes": self.notes}


def problem_lines(lines: Iterable[str]) -> list[str]:
    return [line.rstrip() for line in lines if PROBLEM_LINE.search(line)]


def check_log_file(path: Path, *, offset: int = 0) -> LogReport:
    """ERROR/OOM lines in ``path`` after byte ``offset`` (the file's size when the rollout finished)."""
    report = LogReport(source=str(path))
    try:
        with path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
    except OSError as err:
        report.checked = False
        report.notes.append(f"cannot read {path}: {err.strerror}")
        return report
    found = problem_lines(text.splitlines())
    report.problems += [f"{path.name}: {line[:160]}" for line in found[:MAX_SHOWN]]
    if len(found) > MAX_SHOWN:
        report.problems.append(f"... and {len(found) - MAX_SHOWN} more lines")
    report.notes.append(f"{len(text.splitlines())} lines read")
    return report


def check_pods(api: Any, namespace: str, selector: str, *, since_seconds: int | None = None) -> LogReport:
    """Restarts, OOMKilled and crash-looping containers, and ERROR/OOM lines in the pods' logs."""
    report = LogReport(source=f"kubernetes {namespace}/{selector}")
    try:
        pods = api.list_namespaced_pod(namespace, label_selector=selector).items
    except Exception as err:  # the API's own exception types vary by transport
        report.checked = False
        report.notes.append(f"cannot list pods: {err}")
        return report
    if not pods:
        report.checked = False
        report.notes.append("no pods match the selector")
        return report
    for pod in pods:
        name = pod.metadata.name
        for status in pod.status.container_statuses or []:
            where = f"{name}/{status.name}"
            if status.restart_count:
                report.problems.append(f"{where}: {status.restart_count} restart(s)")
            terminated = getattr(status.last_state, "terminated", None) if status.last_state else None
            if terminated is not None and terminated.reason == "OOMKilled":
                report.problems.append(f"{where}: last terminated OOMKilled (exit {terminated.exit_code})")
            waiting = getattr(status.state, "waiting", None) if status.state else None
            if waiting is not None and waiting.reason in ("CrashLoopBackOff", "OOMKilled", "Error"):
                report.problems.append(f"{where}: waiting {waiting.reason}")
            try:
                text = api.read_namespaced_pod_log(name, namespace, container=status.name, since_seconds=since_seconds)
            except Exception as err:
                report.notes.append(f"{where}: cannot read logs ({err})")
                continue
            found = problem_lines(text.splitlines())
            report.problems += [f"{where}: {line[:160]}" for line in found[:MAX_SHOWN]]
    report.notes.append(f"{len(pods)} pod(s) checked")
    return report


def kubernetes_api() -> Any:
    """A CoreV1Api from the in-cluster service account, else the local kubeconfig."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.CoreV1Api()
