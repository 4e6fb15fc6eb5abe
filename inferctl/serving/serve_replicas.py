"""``inferctl serve-local --replicas N --edge``: N replicas of the serving pod behind the real local Envoy.

Each replica is its own Triton, stand-in engine (its own prefix cache) and OpenAI server
(``inferctl.serving.replicas``); the edge is rendered from the stack's edge policy, routing included, by the same
code as with one replica, and balances the replicas as the stack's ``edge.routing`` says. Runs until interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import Any

from inference_platform.catalog.serving_contract import LOOPBACK
from inference_platform.errors import CommandError

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def check_replicas(args: argparse.Namespace) -> None:
    from inference_platform.inferctl.serving.replicas import MAX_REPLICAS

    if not 1 <= args.replicas <= MAX_REPLICAS:
        raise CommandError(f"--replicas {args.replicas}: expected 1-{MAX_REPLICAS}", exit_code=2)
    if args.replicas > 1 and not args.edge:
        raise CommandError(
            f"--replicas {args.replicas} needs --edge: the edge is what balances the replicas (edge.routing)",
            exit_code=2,
        )
    if args.replicas > 1 and args.batch:
        raise CommandError(
            f"--replicas {args.replicas} with --batch: the local batch lane serves one replica; run --batch with "
            "--replicas 1",
            exit_code=2,
        )


def serve_replicas(
    args: argparse.Namespace, settings: Any, timing: Any, edge: Any, work: Any, banner: Callable[..., str]
) -> int:
    """``work`` is serve-local's claimed work dir: replica i renders under ``work.model/replica-<i>`` (rendered
    anew at each start), the edge keeps its CA in ``work.edge`` as with one replica. ``banner`` is serve-local's
    (passed in: this module is serve-local's, and importing it back would make a circle)."""
    from inference_platform.inferctl.serving.local_edge import run_edge
    from inference_platform.inferctl.serving.replicas import ReplicaPorts, replicas_upstream, run_replicas

    first = ReplicaPorts(http=args.http_port, grpc=args.grpc_port, metrics=args.metrics_port, openai=args.openai_port)
    ports = [first.shifted(i) for i in range(args.replicas)]
    headers = ((edge.triton_header, edge.triton_key),) if edge.triton_key else ()
    previous = {sig: signal.signal(sig, _interrupt) for sig in _STOP_SIGNALS}
    print(
        f"serve-local: {args.stack} stack, {args.replicas} replicas of the CPU stand-in for "
        f"{settings.serving.llm_model_name}, work dir {work.root} (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    try:
        with run_replicas(
            settings.serving, work.model, ports=ports, timing=timing, api_key=edge.triton_key
        ) as replicas:
            for r in replicas:
                print(f"serve-local: replica {r.index}: OpenAI API on {r.openai_url}/v1", file=sys.stderr, flush=True)
            with run_edge(
                edge.policy,
                keys=edge.keys,
                upstream=replicas_upstream(replicas, headers),
                work_dir=edge.work_dir,
                address=LOOPBACK,
                port=args.edge_port,
                admin_port=args.edge_admin_port,
            ) as running:
                print(
                    f"serve-local: edge {running.url} over {len(replicas)} replicas, routing "
                    f"{edge.policy.routing.describe()}; access log {running.access_log} (its 'upstream' names "
                    "the replica)",
                    file=sys.stderr,
                    flush=True,
                )
                print(
                    banner(settings, base_url=f"{running.url}/v1", edge=edge, ca=running.certificates),
                    file=sys.stderr,
                    flush=True,
                )
                signal.pause()
    except KeyboardInterrupt:
        print("serve-local: stopping", file=sys.stderr, flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
