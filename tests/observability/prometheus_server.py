"""A real Prometheus (Debian's ``prometheus`` package) on a free 127.0.0.1 port, scraping given targets
every second with given rule files; bounded start, always stopped, storage in a temporary directory."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from inference_platform.processes import die_with_parent

LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


@dataclass(frozen=True)
class Target:
    job: str
    address: str
    """host:port of the metrics endpoint."""
    labels: Mapping[str, str]
    """What a ServiceMonitor would add (namespace, pod, service)."""
    drop: str | None = None
    """A regex of metric names dropped after the scrape (a ServiceMonitor endpoint's metricRelabelings)."""


class PrometheusError(RuntimeError):
    pass


@dataclass(frozen=True)
class Prometheus:
    url: str
    log: Path

    def query(self, expr: str, *, at: float | None = None) -> list[dict[str, Any]]:
        """The instant vector of ``expr`` (``[]`` when empty); raises PrometheusError on a bad query."""
        params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as err:
            body = json.loads(err.read() or b"{}")
        if body.get("status") != "success":
            raise PrometheusError(f"{expr}: {body.get('errorType')}: {body.get('error')}")
        data = body["data"]
        return data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]

    def scalar(self, expr: str) -> float | None:
        """The single value of ``expr`` (None when the vector is empty)."""
        result = self.query(expr)
        if not result:
            return None
        if len(result) > 1:
            raise PrometheusError(f"{expr}: {len(result)} series, expected one")
        return float(result[0]["value"][1])

    def metric_names(self) -> set[str]:
        with urllib.request.urlopen(f"{self.url}/api/v1/label/__name__/values", timeout=10) as response:
            return set(json.loads(response.read())["data"])


def config(
    targets: Sequence[Target], rule_files: Sequence[Path], metrics_path: Mapping[str, str] | None = None
) -> dict[str, Any]:
    paths = dict(metrics_path or {})
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [_scrape(t, paths.get(t.job, "/metrics"), i) for i, t in enumerate(targets)],
    }


def _scrape(target: Target, path: str, index: int) -> dict[str, Any]:
    """One scrape config per target; targets of one job keep that job label, as one ServiceMonitor's endpoints do."""
    out: dict[str, Any] = {
        "job_name": f"{target.job}-{index}",
        "metrics_path": path,
        "static_configs": [{"targets": [target.address], "labels": dict(target.labels)}],
        "relabel_configs": [{"target_label": "job", "replacement": target.job}],
    }
    if target.drop:
        out["metric_relabel_configs"] = [{"source_labels": ["__name__"], "regex": target.drop, "action": "drop"}]
    return out


@contextlib.contextmanager
def running_prometheus(
    binary: Path,
    work: Path,
    port: int,
    targets: Sequence[Target],
    rule_files: Sequence[Path],
    *,
    metrics_path: Mapping[str, str] | None = None,
) -> Iterator[Prometheus]:
    """``metrics_path``: per job, where other than /metrics (Envoy's admin: /stats/prometheus)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "prometheus.yml").write_text(yaml.safe_dump(config(targets, rule_files, metrics_path), sort_keys=False))
    log = work / "prometheus.log"
    argv = [
        str(binary),
        f"--config.file={work / 'prometheus.yml'}",
        f"--storage.tsdb.path={work / 'data'}",
        "--storage.tsdb.retention.time=1h",
        f"--web.listen-address={LOOPBACK}:{port}",
        "--log.level=warn",
    ]
    with open(log, "wb") as output:
        process = subprocess.Popen(
            argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent()
        )
        try:
            prometheus = Prometheus(url=f"http://{LOOPBACK}:{port}", log=log)
            _wait_ready(process, prometheus)
            yield prometheus
        finally:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT)


def _wait_ready(process: subprocess.Popen[bytes], prometheus: Prometheus) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PrometheusError(f"prometheus exited with {process.returncode}: {prometheus.log.read_text()[-2000:]}")
        with (
            contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
            urllib.request.urlopen(f"{prometheus.url}/-/ready", timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.25)
    raise PrometheusError(f"prometheus not ready within {READY_TIMEOUT:.0f} s")
