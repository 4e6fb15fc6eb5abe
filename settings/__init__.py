"""The typed stack settings: one object built once from Pulumi config and validated before any resource.

``load_settings`` takes plain values (what ``pulumi.Config`` returns, or what the offline tools read
from the stack file) and either returns :class:`Settings` or raises :class:`SettingsError` listing
every problem, each naming its key path as written in the stack file.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_snake

from inference_platform.catalog.names import fit_name
from inference_platform.catalog.regions import REGIONS, Region
from inference_platform.redaction import carries_credential
from inference_platform.settings.access import AccessSettings
from inference_platform.settings.autoscaling import AutoscalingSettings
from inference_platform.settings.base import (
    CheckContext,
    Problem,
    ReadRecorder,
    Section,
    SectionModel,
    SettingsError,
    describe,
    validation_problems,
)
from inference_platform.settings.batch import BatchSettings
from inference_platform.settings.capacity import CapacitySettings
from inference_platform.settings.cluster import ClusterSettings
from inference_platform.settings.cold_start import ColdStartSettings
from inference_platform.settings.edge import EdgeSettings
from inference_platform.settings.fsx import FsxSettings
from inference_platform.settings.inference import InferenceSettings
from inference_platform.settings.keys import KeysSettings
from inference_platform.settings.load_test import LoadTestSettings
from inference_platform.settings.models import ModelsSettings, fallback_for_problems
from inference_platform.settings.network import NetworkSettings
from inference_platform.settings.node_pools import NodePoolsSettings
from inference_platform.settings.observability import ObservabilitySettings
from inference_platform.settings.secrets import SecretsSettings
from inference_platform.settings.serving import ServingSettings
from inference_platform.settings.storage import StorageSettings
from inference_platform.settings.tags import TagsSettings
from inference_platform.settings.verification import VerificationSettings

__all__ = ["SECTIONS", "Problem", "Settings", "SettingsError", "decode_value", "known_keys", "load_settings"]

ENVIRONMENTS = ("development", "production")
DEFAULT_ENVIRONMENT = "development"
REGION_KEY = "aws:region"
NAME_PREFIX_MAX = 40
"""``name_prefix`` length: ElastiCache's 40-character replication group id is the shortest name made from it."""
STACK_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""What a project or stack name may be, joined into physical names: lowercase letters and digits in words
joined by single hyphens. ECR repositories, S3 buckets and ElastiCache ids take lowercase only (ElastiCache
and IAM compare names case-insensitively); ElastiCache refuses ``_``, ``--`` and a trailing ``-``; EKS
cluster names refuse ``.`` (policies/rules/names.py cites each limit)."""

# Every namespaced object the program reads, in the order problems are reported.
SECTIONS: tuple[type[Section | NodePoolsSettings], ...] = (
    TagsSettings,
    NetworkSettings,
    AccessSettings,
    EdgeSettings,
    KeysSettings,
    ClusterSettings,
    NodePoolsSettings,
    ServingSettings,
    StorageSettings,
    FsxSettings,
    SecretsSettings,
    InferenceSettings,
    AutoscalingSettings,
    ColdStartSettings,
    ObservabilitySettings,
    VerificationSettings,
    LoadTestSettings,
    CapacitySettings,
    BatchSettings,
    ModelsSettings,
)
# Top-level keys holding one plain value.
SCALAR_KEYS: tuple[str, ...] = ("environment",)
# Keys that must be set with `pulumi config set --secret`; their values are never echoed.
SECRET_KEYS: tuple[str, ...] = ("ngcApiKey", "hfToken")


@dataclass(frozen=True)
class Settings:
    """Everything the program needs to know about one stack, validated."""

    project: str
    stack: str
    environment: str
    region: Region
    tags: TagsSettings
    network: NetworkSettings
    access: AccessSettings
    edge: EdgeSettings
    keys: KeysSettings
    cluster: ClusterSettings
    node_pools: NodePoolsSettings
    serving: ServingSettings
    storage: StorageSettings
    fsx: FsxSettings
    secrets: SecretsSettings
    inference: InferenceSettings
    autoscaling: AutoscalingSettings
    cold_start: ColdStartSettings
    observability: ObservabilitySettings
    verification: VerificationSettings
    load_test: LoadTestSettings
    capacity: CapacitySettings
    batch: BatchSettings
    models: ModelsSettings

    @property
    def production(self) -> bool:
        return self.environment == "production"

    @property
    def default_tags(self) -> dict[str, str]:
        """The tags every taggable AWS resource carries (applied by one stack-wide transform)."""
        return {
            **self.tags.extra,
            "project": self.project,
            "stack": self.stack,
            "owner": self.tags.owner,
            "cost-center": self.tags.cost_center,
        }

    @property
    def name_prefix(self) -> str:
        """Physical-name prefix: ``<project>-<stack>`` when it has at most 40 characters, else its start and a
        hash of all of it (inference_platform.catalog.names.fit_name), so two long stack names never share it."""
        return fit_name(f"{self.project}-{self.stack}", NAME_PREFIX_MAX)


def known_keys() -> tuple[str, ...]:
    """Project-namespaced config keys the program reads (without the ``<project>:`` prefix)."""
    return (*SCALAR_KEYS, *(s.key for s in SECTIONS), *SECRET_KEYS)


def decode_value(key: str, raw: str) -> Any:
    """Pulumi hands objects to programs as JSON text; a value that is not JSON goes on to validation."""
    if key not in {s.key for s in SECTIONS}:
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def load_settings(
    values: Mapping[str, Any],
    *,
    project: str,
    stack: str,
    region: str | None,
    secret_keys: Iterable[str] = (),
) -> Settings:
    """Validate config ``values`` (project keys without namespace) and build the settings.

    ``secret_keys`` names the keys that arrived as secrets (``secure:`` in the stack file).
    """
    problems: list[Problem] = _names(project, stack)
    problems += _unknown_keys(values)
    environment = values.get("environment", DEFAULT_ENVIRONMENT)
    if environment not in ENVIRONMENTS:
        problems.append(
            Problem("environment", f"got {describe(environment)}; expected one of {', '.join(ENVIRONMENTS)}")
        )
        environment = DEFAULT_ENVIRONMENT
    region_info = _region(region, problems)
    secret = set(secret_keys)
    for key in SECRET_KEYS:
        # "" is Pulumi.yaml's default for these optional keys: unset (a declared key without one is required).
        if values.get(key, "") != "" and key not in secret:
            problems.append(
                Problem(key, f"is set in plain text; set it with `pulumi config set --secret {key} <value>`")
            )

    credentials = _credential_problems(values, secret)
    problems += credentials
    parsed: dict[str, Section | NodePoolsSettings] = {}
    repaired: dict[str, Section | NodePoolsSettings] = {}
    for section in SECTIONS:
        raw = values.get(section.key, {})
        # A value holding a credential is that one problem (its own check would quote it once more).
        found = validation_problems(section, raw, section.key)
        if found:
            problems += [p for p in found if not any(_under(p.path, [c.path]) for c in credentials)]
            stand_in = _repaired(section, raw)
            if stand_in is not None:
                repaired[section.key] = stand_in
        else:
            parsed[section.key] = section.model_validate(raw)
    problems += _semantic_problems(parsed, repaired, stack=stack, environment=environment, region=region_info,
                                   invalid=frozenset(s.key for s in SECTIONS if s.key not in parsed))  # fmt: skip
    problems += _name_collisions(parsed, fit_name(f"{project}-{stack}", NAME_PREFIX_MAX))
    serving_section, models_section = parsed.get("serving"), parsed.get("models")
    if isinstance(serving_section, ServingSettings):
        problems += fallback_for_problems(
            serving_section, models_section if isinstance(models_section, ModelsSettings) else None
        )
    if problems:
        raise SettingsError(problems)
    assert region_info is not None  # a missing or unknown region is a problem above
    fields = {to_snake(key): value for key, value in parsed.items()}  # nodePools -> node_pools
    models, serving = fields.get("models"), fields.get("serving")
    if isinstance(models, ModelsSettings) and isinstance(serving, ServingSettings) and models.fallbacks:
        # The stack's own model's server answers the models that fall back to it (settings/models.py).
        fields["serving"] = serving.model_copy(update={"fallback_for": models.fallback_for(serving.model)})
    return Settings(project=project, stack=stack, environment=environment, region=region_info, **fields)  # type: ignore[arg-type]  # a model per key: mypy cannot pair them with the fields


def _repaired(
    section: type[Section | NodePoolsSettings], raw: Any, attempts: int = 8
) -> Section | NodePoolsSettings | None:
    """A stand-in for a section that failed validation: its raw values with every refused one removed (so
    it takes its default), or None when that does not validate. Other sections' checks then see the keys the
    user did write (``edge.domain``) instead of an absent section they would report as missing."""
    current = copy.deepcopy(raw)
    for _ in range(attempts):
        if not isinstance(current, dict):
            return None
        try:
            return section.model_validate(current)
        except ValidationError as err:
            locs = [tuple(e["loc"]) for e in err.errors(include_url=False)]
        dropped = [_drop(current, loc) for loc in locs if loc]
        if not any(dropped):
            return None
    return None


def _drop(raw: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the value at ``loc`` (its nearest removable mapping key) from ``raw``; False when nothing can go."""
    for depth in range(len(loc), 0, -1):
        parent: Any = raw
        try:
            for part in loc[: depth - 1]:
                parent = parent[part]
        except (KeyError, IndexError, TypeError):
            continue
        key = loc[depth - 1]
        if isinstance(parent, dict) and key in parent:
            del parent[key]
            return True
    return False


def _semantic_problems(
    parsed: Mapping[str, SectionModel],
    repaired: Mapping[str, SectionModel],
    *,
    stack: str,
    environment: str,
    region: Region | None,
    invalid: frozenset[str],
) -> list[Problem]:
    """Every section's semantic problems, without follow-on errors: one bad value gives one problem.

    A section that failed validation (``invalid``) reports only that; other sections' checks see its stand-in
    (:func:`_repaired`: its valid values, defaults for the refused ones), or nothing, and it is named in
    ``CheckContext.failed``. A section whose own checks found a problem is bad too. A check of another section
    that read a bad section is run again with the bad ones absent, and only the problems found both with and
    without them are kept, with those about the bad section's own keys: a problem about another key that
    appears only with the bad values (or only without them) follows from the bad value and is left to its
    own problem."""

    def run(
        section: SectionModel, visible: Mapping[str, SectionModel], failed: frozenset[str]
    ) -> tuple[list[Problem], set[str]]:
        recorder = ReadRecorder(visible)
        ctx = CheckContext(stack=stack, environment=environment, region=region, sections=recorder, failed=failed)
        found = section.problems(ctx)
        return found, recorder.read - {section.key}

    everything = {**repaired, **parsed}
    first = {key: run(value, everything, invalid) for key, value in parsed.items()}
    bad = invalid | {key for key, (found, _) in first.items() if found}
    out: list[Problem] = []
    for key, value in parsed.items():
        found, read = first[key]
        others_bad = (read & bad) - {key}
        if found and others_bad:
            visible = {k: v for k, v in everything.items() if k not in others_bad}
            again, _ = run(value, visible, invalid | others_bad)
            # Kept: problems found without the bad sections too, and problems about a bad section's own keys
            # (another view of the same bad value). Dropped: problems about other keys that follow from it.
            found = [p for p in found if p in again or _under(p.path, others_bad)]
        out += found
    return out


def _under(path: str, keys: Iterable[str]) -> bool:
    return any(path == k or path.startswith((f"{k}.", f"{k}[")) for k in keys)


def _planned_names(sections: Mapping[str, SectionModel], prefix: str) -> list[tuple[str, str, str]]:
    """(what, physical name, key) for every AWS name the program derives from a setting: two keys that plan
    one name make the second resource fail at ``pulumi up`` (``RepositoryAlreadyExistsException``), or both
    manage one. ECR compares names as lower case (infra/inference.py, infra/batch.py lower-case them). Buckets
    and queues take fixed roles under the stack's prefix (components/storage, components/batch): no setting
    names them, so none appears here; a setting that starts naming one adds its row."""
    out: list[tuple[str, str, str]] = []
    inference, batch = sections.get("inference"), sections.get("batch")
    if isinstance(inference, InferenceSettings):
        out.append(("ECR repository", f"{prefix}/{inference.image.repository}".lower(), "inference.image.repository"))
    if isinstance(batch, BatchSettings) and batch.enabled:
        out.append(("ECR repository", f"{prefix}/{batch.image.repository}".lower(), "batch.image.repository"))
    # The verification image's repository exists whenever the Job or the load test is on (infra/verification.py).
    verification, load_test = sections.get("verification"), sections.get("loadTest")
    if isinstance(verification, VerificationSettings) and (
        verification.enabled or (isinstance(load_test, LoadTestSettings) and load_test.enabled)
    ):
        repository = verification.image.repository
        out.append(("ECR repository", f"{prefix}/{repository}".lower(), "verification.image.repository"))
    return out


def _name_collisions(sections: Mapping[str, SectionModel], prefix: str) -> list[Problem]:
    """Two settings planning one physical name: exit 2 naming both keys (issue 28)."""
    seen: dict[tuple[str, str], str] = {}
    out = []
    for what, name, key in _planned_names(sections, prefix):
        first = seen.setdefault((what, name), key)
        if first != key:
            out.append(
                Problem(key, f"plans the {what} {name!r}, which {first} plans too: one name, two resources; give "
                        f"{key} another value")
            )  # fmt: skip
    return out


def _credential_problems(values: Mapping[str, Any], secret: Iterable[str]) -> list[Problem]:
    """Plain settings never hold a credential (a URL's ``user:token@``, a signed query, a token of a known
    shape: inference_platform.redaction.carries_credential). The stack file is committed, and its values
    are rendered into manifests, ConfigMaps and Job arguments and quoted by every check that refuses
    them; a credential belongs in a secret key (``pulumi config set --secret``). Keys set as secrets are
    not read here."""
    secret = set(secret)
    allowed = (
        "a plain value without credentials; send credentials as a secret (`pulumi config set --secret "
        f"<key> <value>`: {', '.join(SECRET_KEYS)}), never in a URL, a query or a plain setting"
    )
    out: list[Problem] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            if carries_credential(value):
                out.append(Problem(path, f"got {describe(value)}: it holds a credential; expected {allowed}"))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                if isinstance(k, str) and carries_credential(k):
                    out.append(Problem(path, f"the key {describe(k)} holds a credential; expected {allowed}"))
                    continue
                walk(v, f"{path}.{k}")
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    for key, value in values.items():
        if key not in secret and key not in SECRET_KEYS:
            walk(value, key)
    return out


def _names(project: str, stack: str) -> list[Problem]:
    """The project and stack names go into every physical name: refuse those AWS would refuse there."""
    rule = "lowercase letters and digits, words joined by single hyphens (e.g. production-us-east-1a-blue)"
    out = []
    if not STACK_NAME.fullmatch(stack):
        out.append(Problem("stack", f"stack name {stack!r} cannot be part of AWS physical names; use {rule}"))
    if not STACK_NAME.fullmatch(project) or not project[0].isalpha():
        out.append(
            Problem("name (Pulumi.yaml)", f"project name {project!r} cannot start AWS physical names; "
                    f"use {rule}, starting with a letter")
        )  # fmt: skip
    return out


def _unknown_keys(values: Mapping[str, Any]) -> list[Problem]:
    known = known_keys()
    out = []
    for key in values:
        if key not in known:
            hint = difflib.get_close_matches(key, known, n=1)
            did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
            out.append(Problem(key, f"unknown key{did_you_mean}; allowed keys: {', '.join(sorted(known))}"))
    return out


def _region(region: str | None, problems: list[Problem]) -> Region | None:
    if not region:
        problems.append(Problem(REGION_KEY, "missing; set it with `pulumi config set aws:region <region>`"))
        return None
    if region not in REGIONS:
        hint = difflib.get_close_matches(region, REGIONS, n=1)
        did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
        problems.append(Problem(REGION_KEY, f"unknown region {region!r}{did_you_mean}"))
        return None
    return REGIONS[region]
