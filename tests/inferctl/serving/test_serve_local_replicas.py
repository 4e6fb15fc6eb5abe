"""``inferctl serve-local --replicas 3 --edge`` as a user runs it (issue 29 §3): three replicas, each its own Triton,
stand-in engine (its own prefix cache) and OpenAI server, behind the real local Envoy rendered by the cluster's
``envoy`` routing. Through that edge, with the dev stack's routing:

- requests sharing a prompt prefix all land on one replica (the edge's access log names it, and the engines' own
  ``cached_tokens`` show the prefix served from that replica's cache from the second request on);
- prompts with distinct prefixes spread over the replicas;
- a replica killed between requests (its Triton and OpenAI server, SIGKILL, as a pod dies) is routed around: every
  later request is answered 200 by another replica (a retry goes to another host, as Envoy Gateway's retry policy
  says, and passive outlier detection then ejects the dead one), and the shared prefix settles on one survivor;
- SIGTERM stops everything, nothing left running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from inference_platform.catalog.edge_policy import INFERENCE_ROUTES, OUTLIER_CONSECUTIVE_5XX
from inference_platform.catalog.serving_contract import LOOPBACK
from inference_platform.inferctl.serving.replicas import PORT_STRIDE
from inference_platform.processes import die_with_parent
from tests.inferctl.serving.conftest import free_port, leftover_processes, wait_for_line

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(900)]
INFERCTL = [sys.executable, "-m", "inference_platform.inferctl"]
REPLICAS = 3
# Longer than dev's affinity window (edge.routing.prefixTokens 256 x 4 bytes) and than several of the stand-in's
# KV blocks, so a reused prefix shows in cached_tokens.
SYSTEM_CHARS = 1600
DISTINCT_PREFIXES = 12
"""Distinct prefixes over 3 replicas: all on one replica has probability 3 x 3^-12 (Maglev spreads hash keys)."""
LOG_WAIT = 15.0
"""Envoy writes its access log out every second: how long to wait, at most, for a request's line."""


def _system(seed: str) -> str:
    """A system prompt of ``SYSTEM_CHARS`` whose first bytes are ``seed`` (so distinct seeds, distinct prefixes)."""
    words = ("policy", "invoice", "refund", "cluster", "latency", "token", "cache", "replica", "tenant", "budget")
    text = f"[{seed}]"
    i = 0
    while len(text) < SYSTEM_CHARS:
        text += " " + words[i % len(words)]
        i += 1
    return text


def _free_strided_ports(count: int) -> int:
    """A base port whose ``count`` neighbours at ``PORT_STRIDE`` apart, times ``REPLICAS``, are all free."""
    for _ in range(200):
        base = free_port()
        ports = [base + i + PORT_STRIDE * r for r in range(REPLICAS) for i in range(count)]
        if max(ports) < 65536 and all(_bindable(p) for p in ports):
            return base
    pytest.fail("no free set of replica ports")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


class Edge:
    def __init__(self, base: str, ca: Path, key: str, access_log: Path) -> None:
        self.base, self.key, self.access_log = base, key, access_log
        self.context = ssl.create_default_context(cafile=str(ca))
        self.seen = 0

    def chat(self, system: str, user: str) -> tuple[int, dict]:
        body = {
            "model": "Llama-3.1-8B",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": 4,
        }
        request = urllib.request.Request(
            f"{self.base}/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120, context=self.context) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, {}

    def lines(self, count: int) -> list[dict]:
        """The next ``count`` chat-completion lines of the access log (bounded wait for Envoy's flush)."""
        deadline = time.monotonic() + LOG_WAIT
        while True:
            entries = [json.loads(line) for line in self.access_log.read_text().splitlines() if line.strip()]
            chats = [e for e in entries if e["path"] == "/v1/chat/completions"]
            if len(chats) >= self.seen + count or time.monotonic() > deadline:
                new = chats[self.seen : self.seen + count]
                assert len(new) == count, (count, chats[self.seen :])
                self.seen += count
                return new
            time.sleep(0.2)


def _cached(answer: dict) -> int:
    return int(((answer.get("usage") or {}).get("prompt_tokens_details") or {}).get("cached_tokens") or 0)


def test_replicas_behind_the_edge_share_prefixes_spread_and_route_around_a_dead_replica(tmp_path):
    base = _free_strided_ports(4)
    edge_port, admin_port, work, log = free_port(), free_port(), tmp_path / "work", tmp_path / "serve-local.log"
    argv = [
        *INFERCTL, "serve-local", "--edge", f"--replicas={REPLICAS}", f"--edge-port={edge_port}",
        f"--edge-admin-port={admin_port}", f"--http-port={base}", f"--grpc-port={base + 1}",
        f"--metrics-port={base + 2}", f"--openai-port={base + 3}", f"--work-dir={work}",
        "--first-token-delay-ms=1", "--token-delay-ms=1",
    ]  # fmt: skip
    with open(log, "wb") as output:
        process = subprocess.Popen(
            argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent()
        )
    try:
        wait_for_line(process, log, "serve-local: the OpenAI API is ready", timeout=600)
        text = log.read_text()
        for index in range(REPLICAS):
            assert f"replica {index}: OpenAI API on http://{LOOPBACK}:{base + 3 + PORT_STRIDE * index}/v1" in text
        assert "routing envoy: prefix affinity" in text
        key = json.loads((work / "api-keys.json").read_text())["default"]
        edge = Edge(
            f"https://{LOOPBACK}:{edge_port}", work / "edge" / "tls" / "ca.pem", key, work / "edge" / "access.log"
        )
        shared = _system("shared")

        # One prefix: one replica, whose own cache serves the prefix from the second request on.
        answers = [edge.chat(shared, f"question {i}") for i in range(4)]
        assert [status for status, _ in answers] == [200] * 4
        lines = edge.lines(4)
        (home,) = {line["upstream"] for line in lines}
        assert len({line["affinity"] for line in lines}) == 1 and lines[0]["affinity"]
        assert _cached(answers[0][1]) < len(shared) // 2
        assert all(_cached(a) >= len(shared) - 64 for _, a in answers[1:]), [_cached(a) for _, a in answers]

        # Distinct prefixes: spread over the replicas.
        distinct = [edge.chat(_system(f"tenant {i}"), "hello") for i in range(DISTINCT_PREFIXES)]
        assert [status for status, _ in distinct] == [200] * DISTINCT_PREFIXES
        spread = {line["upstream"] for line in edge.lines(DISTINCT_PREFIXES)}
        assert len(spread) >= 2, spread

        # The shared prefix's replica dies (its Triton and OpenAI server, as a pod goes): routed around.
        dead = (int(home.rsplit(":", 1)[1]) - (base + 3)) // PORT_STRIDE
        killed = _kill_replica(work, dead)
        assert killed >= 2, killed
        # "Between requests": the next request is sent once the replica is gone (its port refuses), not while it is
        # dying. A request already written to a dying server's connection is a 503 the edge does not retry (RETRY_ON
        # retries only requests that never left: the dead server may have started generating, and a request that
        # kills servers must not be replayed on the next ones); that race is the kill's, not the routing's.
        _wait_refused(base + 3 + PORT_STRIDE * dead)
        # Until outlier detection ejects it (OUTLIER_CONSECUTIVE_5XX first attempts refused), each request's retry
        # goes to another replica; then the prefix's hash settles on one survivor, whose cache serves it again.
        count = OUTLIER_CONSECUTIVE_5XX + 3
        after = [edge.chat(shared, f"after {i}") for i in range(OUTLIER_CONSECUTIVE_5XX)]
        # The worker that counts the last failure only posts the ejection to Envoy's main thread, which then hands
        # the new host set to the workers (outlier_detection_impl.cc notifyMainThreadConsecutiveError): a request
        # sent before that lands may still be retried around the dead host instead of hashed to the survivor.
        _wait_ejected(f"http://{LOOPBACK}:{admin_port}", INFERENCE_ROUTES, home)
        after += [edge.chat(shared, f"after {i}") for i in range(OUTLIER_CONSECUTIVE_5XX, count)]
        after_lines = edge.lines(count)
        assert [status for status, _ in after] == [200] * count, [
            {k: line[k] for k in ("status", "flags", "details", "upstream")} for line in after_lines
        ]
        survivors = [line["upstream"] for line in after_lines]
        assert home not in survivors, survivors
        assert len(set(survivors[-3:])) == 1, survivors
        assert _cached(after[-1][1]) >= len(shared) - 64

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert leftover_processes(str(work)) == []


def _wait_ejected(admin_url: str, cluster: str, upstream: str, timeout: float = 10.0) -> None:
    """Until the edge's admin shows ``upstream`` (``host:port``) of ``cluster`` ejected by outlier detection."""
    host, port = upstream.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{admin_url}/clusters?format=json", timeout=5) as response:
            body = json.loads(response.read())
        for status in body.get("cluster_statuses", []):
            for held in status.get("host_statuses", []) if status.get("name") == cluster else []:
                address = held["address"]["socket_address"]
                ejected = held.get("health_status", {}).get("failed_outlier_check")
                if (address["address"], str(address["port_value"])) == (host, port) and ejected:
                    return
        time.sleep(0.05)
    pytest.fail(f"{upstream} of {cluster} was not ejected by outlier detection within {timeout:g} s")


def _wait_refused(port: int, timeout: float = 10.0) -> None:
    """Until nothing listens on ``port`` (a killed server's sockets close when it exits), bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.settimeout(1.0)
            if probe.connect_ex((LOOPBACK, port)) != 0:
                return
        time.sleep(0.05)
    pytest.fail(f"port {port} still accepts connections {timeout:g} s after its server was killed")


def _kill_replica(work: Path, index: int) -> int:
    """SIGKILL every process of replica ``index`` (their command lines name its own directory); how many."""
    marker = f"{work}/model/replica-{index}/"
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed
