"""GPU utilisation through a real Prometheus (Debian's package) scraping a DCGM-shaped exporter.

The exporter is a STAND-IN for NVIDIA's DCGM exporter (no GPU here): it serves two GPUs'
DCGM_FI_DEV_GPU_UTIL gauges in the Prometheus text format. Prometheus, the PromQL and our HTTP API
client are real.
"""

from __future__ import annotations

import contextlib
import http.server
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from inference_platform.inferctl.verify.prometheus import gpu_utilization
from inference_platform.processes import die_with_parent, free_port
from tests.system_tools import require_tool

pytestmark = [pytest.mark.live, pytest.mark.timeout(120)]
EXPORTED = (
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="NVIDIA H100 80GB HBM3"} 85\n'
    'DCGM_FI_DEV_GPU_UTIL{gpu="1",modelName="NVIDIA H100 80GB HBM3"} 65\n'
)


class _Exporter(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = EXPORTED.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def exporter() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def prometheus(work: Path, target: str) -> Iterator[str]:
    binary = require_tool("prometheus")
    port = free_port()
    config = {"global": {"scrape_interval": "1s"}, "scrape_configs": [{"job_name": "dcgm", "static_configs": [{"targets": [target]}]}]}  # fmt: skip
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    argv = [str(binary), f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]  # fmt: skip
    with open(work / "prometheus.log", "wb") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent()
        )
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


def test_mean_gpu_utilisation_over_the_window(tmp_path):
    with exporter() as target, prometheus(tmp_path, target) as url:
        deadline = time.monotonic() + 60
        found = gpu_utilization(url, window_s=30, at=time.time())
        while found.value is None and time.monotonic() < deadline:
            time.sleep(0.5)
            found = gpu_utilization(url, window_s=30, at=time.time())
    assert found.value == pytest.approx(0.75), found.note
    assert found.query == "avg(avg_over_time(DCGM_FI_DEV_GPU_UTIL[30s])) / 100"


def test_no_series_and_no_prometheus_are_not_measured(tmp_path):
    with exporter() as target, prometheus(tmp_path, target) as url:
        deadline = time.monotonic() + 60
        found = gpu_utilization(url, window_s=5, at=time.time(), selector='gpu="7"')
        while "no DCGM_FI_DEV_GPU_UTIL series" not in found.note and time.monotonic() < deadline:
            time.sleep(0.5)  # "not reachable" until Prometheus listens
            found = gpu_utilization(url, window_s=5, at=time.time(), selector='gpu="7"')
        assert found.value is None and "no DCGM_FI_DEV_GPU_UTIL series" in found.note
    gone = gpu_utilization(url, window_s=5, at=time.time())
    assert gone.value is None and "not reachable" in gone.note
