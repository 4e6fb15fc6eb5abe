"""Secrets as literals under any name: a credential-looking value in a container's environment, a
ConfigMap, a Lambda environment or a Kubernetes Secret's ``stringData``/``data`` written into the program.

no-secret-literals (inference_platform.policies.rules.secrets) judges names (``*TOKEN*`` ...); this rule judges values,
with Yelp's detect-secrets detectors: known credential formats (AWS access keys, private keys, GitHub,
Slack, Stripe, OpenAI tokens, JWTs, basic-auth URLs ...) and high-entropy strings (base64 above 4.5 bits
per character, hex above 3.0, detect-secrets' defaults). A value computed by another resource (a
``random.RandomPassword``, a Secrets Manager read) is unknown during preview and never judged; what is
judged was written into the program or its plain config.

Not secrets, and so skipped: ARNs, paths, image references by digest, and SHA-1/SHA-256 digests (40 or 64
hex digits, optionally ``sha256:``): stacks pin artifacts and manifests by digest. A Kubernetes Secret the
program must fill from config can be exempted by name (``exemptions``: ``Secret/<namespace>/<name>``);
better, deliver it through the Secrets Store CSI driver.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import BasePlugin
from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.workloads import containers, pod_specs, workload_id

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
K8S_SECRET = "kubernetes:core/v1:Secret"
LAMBDA = "aws:lambda/function:Function"
# Name-based detection is no-secret-literals' job; public IPs are addresses, not credentials.
SKIPPED_DETECTORS = frozenset({"Secret Keyword", "Public IP (ipv4)"})
ENTROPY_DETECTORS = frozenset({"Base64 High Entropy String", "Hex High Entropy String"})
_DIGEST = re.compile(r"^(sha1:|sha256:)?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$")
_TOKEN_SPLIT = re.compile(r"[\s\"'`,;{}\[\]()<>]+")


@lru_cache(maxsize=1)
def _detectors() -> tuple[Any, ...]:
    # detect-secrets types its mapping with a TypeVar bound nowhere (Type[Plugin]): read it as the plugins' base.
    mapping: Mapping[str, type[BasePlugin]] = get_mapping_from_secret_type_to_class()
    return tuple(cls() for kind, cls in mapping.items() if kind not in SKIPPED_DETECTORS)


def _not_a_secret(value: str) -> bool:
    text = value.strip()
    return bool(_DIGEST.match(text)) or text.startswith(("arn:", "/")) or "@sha256:" in text


def detect(value: str) -> list[str]:
    """The kinds of secret ``value`` looks like (detect-secrets type names), empty when none.

    Every distinct line goes through the format detectors (``AKIA...``, ``user:pass@``, private keys ...),
    every distinct token of 8+ characters through the entropy detectors, quoted, as those only judge
    quoted strings. Distinct only: a large ConfigMap repeats most of its lines and tokens."""
    lines = set(value.splitlines() or [value])
    tokens = {f'"{t}"' for line in lines for t in _TOKEN_SPLIT.split(line) if len(t) >= 8}
    entropy = [d for d in _detectors() if d.secret_type in ENTROPY_DETECTORS]
    formats = [d for d in _detectors() if d.secret_type not in ENTROPY_DETECTORS]
    found: set[str] = set()
    for candidates, detectors in ((lines, formats), (tokens, entropy)):
        for candidate in candidates:
            for detector in detectors:
                for secret in detector.analyze_line(filename="program", line=candidate, line_number=1):
                    if not _not_a_secret(str(secret.secret_value or "")):
                        found.add(secret.type)
    return sorted(found)


def _decoded(value: str) -> str:
    """Kubernetes Secret/ConfigMap ``data`` is base64; judge what it decodes to (as given when it is not)."""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return value


def literal_values(resource_type: str, props: Any) -> Iterator[tuple[str, str]]:
    """(where, value) for every plain literal the rule judges."""
    for path, spec in pod_specs(resource_type, props):
        for where, container in containers(spec):
            for entry in as_list(get(container, "env")):
                value = get(entry, "value")
                if isinstance(value, str) and value:
                    yield f"{path}.{where}.env.{get(entry, 'name', '?')}", value
    if resource_type in (CONFIG_MAP, K8S_SECRET):
        for field in ("stringData", "data", "binaryData"):
            entries = get(props, field) or {}
            for key, value in entries.items() if isinstance(entries, Mapping) else ():
                if isinstance(value, str) and value:
                    yield f"{field}.{key}", value if field == "stringData" else _decoded(value)
    if resource_type == LAMBDA:
        variables = get(props, "environment.variables") or {}
        for key, value in variables.items() if isinstance(variables, Mapping) else ():
            if isinstance(value, str) and value:
                yield f"environment.variables.{key}", value


def _no_secret_values(args: ResourceValidationArgs, report: ReportViolation) -> None:
    exempt = set(args.get_config().get("exemptions") or [])
    if workload_id(args.resource_type, args.props, args.name) in exempt:
        return
    for where, value in literal_values(args.resource_type, args.props):
        kinds = detect(value)
        if kinds:
            report(
                f"{where} holds a literal that looks like a secret ({', '.join(kinds)}); deliver it from Secrets "
                "Manager (Secrets Store CSI volume) or reference a Secret (valueFrom.secretKeyRef)"
            )


POLICIES = [
    ResourceValidationPolicy(
        name="no-secret-values",
        description="No container env value, ConfigMap entry, Lambda environment variable or Kubernetes Secret "
        "stringData/data literal looks like a credential (detect-secrets formats and entropy).",
        validate=_no_secret_values,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "exemptions": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "objects whose literals are not judged (Kind/namespace/name)",
                }
            }
        ),
    ),
]
