"""Scale-down that loses nothing (issue 31 §4), on the local rig: 3 replicas (real Triton, the stand-in engine, the
OpenAI server each) behind the real local Envoy, whose inference cluster takes its endpoints by EDS as the cluster's
Envoy Gateway gives them (``inferctl/serving/endpoints.py``).

Under a steady load (long streams in flight on every replica, new short requests arriving all the time), the
replica holding the most streams is removed by the path a scale-down takes (``inferctl/serving/scale_down.py``): its
endpoint turns terminating (EndpointSlice) → the edge holds it DRAINING → pre-stop → SIGTERM, the server drains →
exit → the endpoint leaves. Asserted:

- every stream that had its first token finishes with its whole answer (``[DONE]``, a finish reason, the usage
  counting every token asked for when it stopped on length);
- every request that started after the deletion is answered 200 by a surviving replica (the edge's access log), and
  no request anywhere got a 5xx; the edge retried nothing and failed no connection (its own counters), so no
  request was refused by the leaving replica and hidden by a retry;
- the leaving replica's OpenAI server exited by itself (status 0) after SIGTERM, within the drain bound;
- nothing is left running.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from inference_platform.catalog.edge_policy import INFERENCE_ROUTES
from inference_platform.inferctl.serving.endpoints import DRAINING, LocalEndpoints, edge_host_statuses
from inference_platform.inferctl.serving.local_edge import generate_keys, run_edge
from inference_platform.inferctl.serving.replicas import Replica, ReplicaPorts, replicas_upstream, run_replicas
from inference_platform.inferctl.serving.scale_down import Removal, remove_replica
from inference_platform.inference_image.openai_api.__main__ import GRACEFUL_SHUTDOWN_S
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files
from inference_platform.settings.derived import stack_edge_policy
from tests.inferctl.serving.conftest import LOOPBACK, free_port, leftover_processes

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(600)]

REPLICAS = 3
LONG_STREAMS = 9
"""In flight when the replica goes: 3 per replica on average, distinct prefixes so the edge's hash spreads them."""
LONG_TOKENS = 200
"""At the stand-in's 25 ms a token: about 5 s of decode, so the streams outlive the pre-stop time and are still
running when the server gets SIGTERM."""
SHORT_TOKENS = 8
ARRIVALS = 2
"""Threads sending new short streams back to back, from before the removal until after the endpoint is gone."""
PRE_STOP_S = 2.0
"""The local preStop: the edge must hold the endpoint as DRAINING before it ends (remove_replica checks)."""
SCENARIO_S = 60.0
LOG_WAIT_S = 15.0
TIMING = Timing(first_token_delay_ms=5, token_delay_ms=25, prefill_us_per_token=20)


@dataclass
class Outcome:
    started: float
    status: int = 0
    first_token: float | None = None
    done: bool = False
    finish_reason: str | None = None
    completion_tokens: int | None = None
    error: str = ""
    chunks: list[str] = field(default_factory=list)


class Client:
    def __init__(self, url: str, ca: Path, key: str, model: str) -> None:
        self.url, self.key, self.model = url, key, model
        self.context = ssl.create_default_context(cafile=str(ca))

    def stream(self, prefix: str, max_tokens: int, out: Outcome) -> None:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": prefix}, {"role": "user", "content": "tell me a story"}],
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "ignore_eos": True,  # the whole max_tokens, so a stream cut short shows
        }
        request = urllib.request.Request(
            f"{self.url}/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=SCENARIO_S, context=self.context) as response:
                out.status = response.status
                for raw in response:
                    line = raw.decode().strip()
                    if not line.startswith("data: "):
                        continue
                    data = line[len("data: ") :]
                    if data == "[DONE]":
                        out.done = True
                        break
                    chunk = json.loads(data)
                    for choice in chunk.get("choices") or []:
                        if (choice.get("delta") or {}).get("content"):
                            out.first_token = out.first_token or time.monotonic()
                            out.chunks.append(choice["delta"]["content"])
                        out.finish_reason = choice.get("finish_reason") or out.finish_reason
                    if chunk.get("usage"):
                        out.completion_tokens = chunk["usage"]["completion_tokens"]
        except urllib.error.HTTPError as err:
            out.status = err.code
        except Exception as err:
            out.error = f"{type(err).__name__}: {err}"

    @staticmethod
    def complete(out: Outcome, max_tokens: int) -> bool:
        """Whether ``out`` is a whole answer: 200, every token asked for (EOS ignored) streamed, then ``[DONE]``."""
        return (
            out.status == 200 and out.done and not out.error and out.finish_reason == "length"
            and out.completion_tokens == max_tokens and bool("".join(out.chunks))
        )  # fmt: skip


def _prefix(seed: str) -> str:
    return f"[{seed}] " + " ".join(["replica", "drain", "stream", "token"] * 60)


def _cluster_counter(admin_url: str, name: str) -> int:
    with urllib.request.urlopen(f"{admin_url}/stats?filter=^cluster\\.{INFERENCE_ROUTES}\\.{name}$", timeout=5) as r:
        text = r.read().decode()
    return sum(int(line.rsplit(":", 1)[1]) for line in text.splitlines() if ":" in line)


def _access_log(path: Path, count: int) -> list[dict]:
    """The edge's access log once it holds ``count`` requests (Envoy flushes it every second; bounded wait)."""
    deadline = time.monotonic() + LOG_WAIT_S
    while True:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if len(entries) >= count or time.monotonic() > deadline:
            return entries
        time.sleep(0.2)


def _active(replica) -> int:
    try:
        return int(json.loads(replica.model.state_file.read_text())["active"])
    except (OSError, ValueError, KeyError):
        return 0


@pytest.mark.parametrize("removed", [1, 2], ids=["one-replica", "to-the-floor-at-once"])
def test_replicas_scaled_down_under_load_lose_no_stream(tmp_path: Path, removed: int) -> None:
    """``removed`` replicas of 3 go at once: one (a scale-down step), or two (the night's scale-down to a floor of
    one, every pod deleted together: 1 of 3 hosts healthy is below Envoy's 50 % panic threshold, yet draining hosts
    are excluded from that count, so the edge must not panic and spray the leaving replicas)."""
    settings = stack_files.load("dev")
    policy = stack_edge_policy(settings)
    keys = generate_keys(policy)
    model = settings.serving.served_model_name
    ports = [ReplicaPorts.free() for _ in range(REPLICAS)]
    with run_replicas(settings.serving, tmp_path / "model", ports=ports, timing=TIMING) as replicas:
        eds = LocalEndpoints(
            tmp_path / "eds" / "inference.json", cluster=INFERENCE_ROUTES, members=[r.endpoint for r in replicas]
        )
        with run_edge(
            policy,
            keys=keys,
            upstream=replicas_upstream(replicas, eds_file=eds.path),
            work_dir=tmp_path / "edge",
            address=LOOPBACK,
            port=free_port(),
            admin_port=free_port(),
        ) as edge:
            held = edge_host_statuses(edge.admin_url, INFERENCE_ROUTES)
            assert set(held) == {r.endpoint for r in replicas} and DRAINING not in held.values(), held
            client = Client(edge.url, edge.certificates.ca, next(iter(keys.values())), model)

            long_out = [Outcome(time.monotonic()) for _ in range(LONG_STREAMS)]
            long_threads = [
                threading.Thread(target=client.stream, args=(_prefix(f"long {i}"), LONG_TOKENS, out), daemon=True)
                for i, out in enumerate(long_out)
            ]
            short_out: list[Outcome] = []
            stop_arrivals = threading.Event()

            def arrivals(lane: int) -> None:
                n = 0
                while not stop_arrivals.is_set():
                    out = Outcome(time.monotonic())
                    short_out.append(out)
                    client.stream(_prefix(f"short {lane} {n}"), SHORT_TOKENS, out)
                    n += 1

            arrival_threads = [threading.Thread(target=arrivals, args=(i,), daemon=True) for i in range(ARRIVALS)]
            for thread in (*long_threads, *arrival_threads):
                thread.start()
            deadline = time.monotonic() + SCENARIO_S
            while not all(o.first_token or o.status not in (0, 200) for o in long_out):
                assert time.monotonic() < deadline, "the long streams never all had their first token"
                time.sleep(0.05)
            assert all(o.first_token for o in long_out), [(o.status, o.error) for o in long_out]

            # The replicas with the most streams running go, as a scale-down deletes pods (all at once).
            victims = sorted(replicas, key=_active, reverse=True)[:removed]
            in_flight = sum(_active(v) for v in victims)
            assert in_flight >= 1, [_active(r) for r in replicas]
            removals: dict[int, Removal] = {}
            errors: list[BaseException] = []

            def remove(victim: Replica) -> None:
                try:
                    removals[victim.index] = remove_replica(
                        victim,
                        eds,
                        admin_url=edge.admin_url,
                        pre_stop_seconds=PRE_STOP_S,
                        exit_timeout_seconds=GRACEFUL_SHUTDOWN_S,
                    )
                except BaseException as err:
                    errors.append(err)

            deleted_wall = time.time()
            removers = [threading.Thread(target=remove, args=(v,), daemon=True) for v in victims]
            for thread in removers:
                thread.start()
            for thread in removers:
                thread.join(timeout=SCENARIO_S)
            assert not errors and len(removals) == removed, errors
            time.sleep(1.0)  # new requests keep arriving on the survivors
            stop_arrivals.set()
            for thread in (*long_threads, *arrival_threads):
                thread.join(timeout=SCENARIO_S)
                assert not thread.is_alive()
            retries = _cluster_counter(edge.admin_url, "upstream_rq_retry")
            connect_failures = _cluster_counter(edge.admin_url, "upstream_cx_connect_fail")
            panics = _cluster_counter(edge.admin_url, "lb_healthy_panic")
            victim_hosts = {f"{v.endpoint[0]}:{v.endpoint[1]}" for v in victims}
            sigterm_wall = deleted_wall + min(r.sigterm_s for r in removals.values())
            draining_s = max(r.edge_draining_s for r in removals.values())
            entries = _access_log(edge.access_log, LONG_STREAMS + len(short_out))
        report = {
            "streams_in_flight_on_removed": in_flight,
            "long_streams": LONG_STREAMS,
            "long_complete": sum(client.complete(o, LONG_TOKENS) for o in long_out),
            "new_requests": len(short_out),
            "new_after_deletion": sum(e["start_s"] and float(e["start_s"]) >= deleted_wall for e in entries),
            "5xx": sum(int(e["status"]) >= 500 for e in entries),
            # Streams of the removed replica still running when its server got SIGTERM: drained, not cut.
            "drained_after_sigterm": sum(
                e["upstream"] in victim_hosts and float(e["start_s"]) + int(e["duration_ms"]) / 1000 > sigterm_wall
                for e in entries
            ),
            "removals": removals,
        }
        print(f"scale-down: {report}")

    # Every stream that had its first token finished whole (the removed replica's among them).
    assert report["long_complete"] == LONG_STREAMS, [(o.status, o.error, o.finish_reason) for o in long_out]
    assert all(client.complete(o, SHORT_TOKENS) for o in short_out), [
        (o.status, o.error, o.finish_reason) for o in short_out if not client.complete(o, SHORT_TOKENS)
    ]
    chats = [e for e in entries if e["path"] == "/v1/chat/completions"]
    assert len(chats) == LONG_STREAMS + len(short_out)
    assert report["5xx"] == 0 and {int(e["status"]) for e in chats} == {200}, {e["status"] for e in entries}
    # No request was refused by a leaving replica and rescued by a retry: none was retried at all; the edge never
    # fell into panic routing (which would send new requests to draining hosts too).
    assert retries == 0 and connect_failures == 0 and panics == 0, (retries, connect_failures, panics)
    # After the deletion, new requests went only to the survivors.
    after = [e for e in chats if float(e["start_s"]) >= deleted_wall + draining_s]
    assert report["new_after_deletion"] >= 4 and after, report
    assert not victim_hosts & {e["upstream"] for e in after}, victim_hosts
    assert report["drained_after_sigterm"] >= 1, report
    # The order held: draining at the edge before SIGTERM; the server then drained and exited on its own, in bound.
    for removal in removals.values():
        assert removal.edge_draining_s <= PRE_STOP_S <= removal.sigterm_s < removal.server_exit_s
        assert removal.server_exit_code == 0
        assert removal.server_exit_s - removal.sigterm_s <= GRACEFUL_SHUTDOWN_S
    assert leftover_processes(str(tmp_path)) == []
