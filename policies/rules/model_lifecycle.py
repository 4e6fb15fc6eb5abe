"""``model-objects-not-expired``: no S3 lifecycle rule expires, or moves out of reach, the model objects a
stack serves from.

What a stack serves from: every ``s3://bucket/prefix`` its resources name (the serving rollouts' engine and
tokenizer URIs, build and verification Jobs), and the whole model prefix (``modelPrefixes``, default
``models/``, ModelStore's default) of the models bucket of a ``ModelStore`` component (its child bucket tagged
``bucket-role: models``). A lifecycle rule is related to its bucket through the property dependency of its
``bucket`` input (``BucketLifecycleConfiguration``, also under its old V2 token), or is the bucket's own inline
``lifecycleRules`` (still accepted by pulumi-aws 7's ``Bucket``/``BucketV2``, deprecated).

An enabled rule whose filter can match a served object (its prefix is a prefix of the served one or the other
way round; a tag or size filter can match any object) must not expire current versions (``expiration.days``
or ``date``; removing expired delete markers is fine) nor transition them to GLACIER or DEEP_ARCHIVE, which
need a restore before every read: a rollout or a node replacement would then fail to download its engine.
Transitions to classes read directly (STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR) and
noncurrent-version rules are allowed: ModelStore's own cold rules move tagged objects to STANDARD_IA.
An S3 Intelligent-Tiering configuration (``aws:s3/bucketIntelligentTieringConfiguration``) whose filter can
match a served object must not enable the ARCHIVE_ACCESS or DEEP_ARCHIVE_ACCESS tiers either: an engine not
read for that many days (a rollback target) would need a restore first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, PolicyResource, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.storage import BUCKETS

LIFECYCLES = frozenset(
    {
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
    }
)
TIERING = "aws:s3/bucketIntelligentTieringConfiguration:BucketIntelligentTieringConfiguration"
ARCHIVE_TIERS = ("ARCHIVE_ACCESS", "DEEP_ARCHIVE_ACCESS")
MODEL_STORE = "inference:storage:ModelStore"
BUCKET_ROLE_TAG = "bucket-role"
MODEL_PREFIXES = ["models/"]
RESTORE_CLASSES = ("GLACIER", "DEEP_ARCHIVE")
_S3_URI = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/([^\s\"']*)")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)) or (hasattr(value, "__iter__") and not isinstance(value, (bytes, str))):
        for v in value:
            yield from _strings(v)


def _served_uris(resources: list[PolicyResource]) -> list[tuple[str, str]]:
    found: dict[tuple[str, str], None] = {}
    for resource in resources:
        try:
            for text in _strings(resource.props):
                for bucket, key in _S3_URI.findall(text):
                    found[(bucket, key)] = None
        except UnknownValueError:
            continue  # unknown during preview: its URIs are judged by the update's check
    return list(found)


def _names(resource: PolicyResource) -> tuple[set[str], list[str]]:
    """The bucket's literal names and its name prefixes (``bucketPrefix``: the provider appends a suffix)."""
    try:
        names = {str(get(resource.props, "bucket"))} if get(resource.props, "bucket") else set()
        prefixes = [str(get(resource.props, "bucketPrefix"))] if get(resource.props, "bucketPrefix") else []
    except UnknownValueError:
        return set(), []
    return names, prefixes


def _is_model_bucket(bucket: PolicyResource) -> bool:
    parent = bucket.parent
    tags = dict(get(bucket.props, "tags") or {})
    return parent is not None and parent.resource_type == MODEL_STORE and tags.get(BUCKET_ROLE_TAG) == "models"


def _served_prefixes(
    buckets: list[PolicyResource], extra_names: set[str], uris: list[tuple[str, str]], model_prefixes: list[str]
) -> list[str]:
    names, name_prefixes = set(extra_names), []
    for bucket in buckets:
        more, prefixes = _names(bucket)
        names |= more
        name_prefixes += prefixes
    served = [key for name, key in uris if name in names or any(name.startswith(p) for p in name_prefixes)]
    if any(_is_model_bucket(b) for b in buckets):
        served += model_prefixes
    return list(dict.fromkeys(served))


def _rule_prefix(rule: Any, inline: bool) -> str:
    """The key prefix a rule applies to: "" (every object) also for tag and size filters, which any object
    may meet."""
    if inline:
        return str(get(rule, "prefix", "") or "")
    prefix = get(rule, "filter.prefix")
    if prefix is None:
        prefix = get(rule, "filter.and.prefix")
    if prefix is None:
        prefix = get(rule, "prefix")
    return str(prefix or "")


def _enabled(rule: Any, inline: bool) -> bool:
    return get(rule, "enabled", False) is True if inline else str(get(rule, "status", "")) == "Enabled"


def _rule_problems(rule: Any, inline: bool) -> list[str]:
    out = []
    if get(rule, "expiration.days") is not None or get(rule, "expiration.date"):
        when = get(rule, "expiration.days")
        out.append(f"expires current objects ({f'after {int(when)} days' if when is not None else 'on a date'})")
    for transition in as_list(get(rule, "transitions")):
        storage_class = str(get(transition, "storageClass", ""))
        if storage_class in RESTORE_CLASSES:
            out.append(f"transitions current objects to {storage_class} (every read needs a restore first)")
    return out


def _judge(rules: list[Any], inline: bool, served: list[str], where: str, urn: str, report: ReportViolation) -> None:
    for rule in rules:
        if not _enabled(rule, inline):
            continue
        prefix = _rule_prefix(rule, inline)
        hit = [s for s in served if s.startswith(prefix) or prefix.startswith(s)]
        if not hit:
            continue
        name = get(rule, "id") or "(no id)"
        for problem in _rule_problems(rule, inline):
            report(
                f"{where}: rule {name} (prefix {prefix!r}) {problem} under s3 prefix {hit[0]!r} this stack serves from",
                urn,
            )


def _judge_tiering(resource: PolicyResource, served: list[str], report: ReportViolation) -> None:
    if str(get(resource.props, "status", "Enabled")) != "Enabled":
        return
    prefix = str(get(resource.props, "filter.prefix") or "")
    hit = [s for s in served if s.startswith(prefix) or prefix.startswith(s)]
    if not hit:
        return
    for tier in as_list(get(resource.props, "tierings")):
        access = str(get(tier, "accessTier", ""))
        if access in ARCHIVE_TIERS:
            report(
                f"intelligent tiering {resource.name} (prefix {prefix!r}) moves objects not read for "
                f"{int(_days(get(tier, 'days')))} days to {access} (a restore before the next read) under s3 prefix "
                f"{hit[0]!r} this stack serves from",
                resource.urn,
            )


def _days(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _not_expired(args: StackValidationArgs, report: ReportViolation) -> None:
    model_prefixes = [str(p) for p in (args.get_config().get("modelPrefixes") or MODEL_PREFIXES)]
    resources = list(args.resources)
    uris = _served_uris(resources)
    for resource in resources:
        try:
            if resource.resource_type in (*LIFECYCLES, TIERING):
                deps = [d for d in resource.property_dependencies.get("bucket", []) if d.resource_type in BUCKETS]
                literal = get(resource.props, "bucket")
                if not deps and literal:
                    deps = [b for b in resources if b.resource_type in BUCKETS and literal in _names(b)[0]]
                served = _served_prefixes(deps, {str(literal)} if literal else set(), uris, model_prefixes)
            if resource.resource_type == TIERING:
                _judge_tiering(resource, served, report)
            elif resource.resource_type in LIFECYCLES:
                rules = as_list(get(resource.props, "rules"))
                _judge(rules, False, served, f"lifecycle {resource.name}", resource.urn, report)
            elif resource.resource_type in BUCKETS and get(resource.props, "lifecycleRules"):
                served = _served_prefixes([resource], set(), uris, model_prefixes)
                rules = as_list(get(resource.props, "lifecycleRules"))
                _judge(rules, True, served, f"bucket {resource.name}", resource.urn, report)
        except UnknownValueError:
            continue  # unknown during preview: the update's own check decides


POLICIES = [
    StackValidationPolicy(
        name="model-objects-not-expired",
        description="No S3 lifecycle rule expires, or moves to GLACIER/DEEP_ARCHIVE, the model objects the stack "
        "serves from.",
        validate=_not_expired,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"modelPrefixes": {"type": "array", "items": {"type": "string"}, "default": MODEL_PREFIXES}}
        ),
    ),
]
