"""Issue 18 §1 (contradictions across sections, keys that do nothing, one error per bad value): each
bad value of a shipped stack is one problem naming its key; the stack as shipped passes."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml

from inference_platform.settings import SettingsError, load_settings

STACKS = Path(__file__).resolve().parents[2] / "stacks"
PROJECT = "inference-platform"


def stack_values(stack: str) -> tuple[dict, str]:
    """A shipped stack's values (a fresh copy each call: callers edit them) and its region."""
    values, region = _parsed(stack)
    return copy.deepcopy(values), region


@functools.cache
def _parsed(stack: str) -> tuple[dict, str]:
    # Parsed once per process: the sweeps ask for the same three files thousands of times, and PyYAML's pure-Python
    # parser took most of tests/settings' CPU. libyaml's parser with the same resolver, as settings/project.py reads
    # the files.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    config = yaml.load((STACKS / f"Pulumi.{stack}.yaml").read_text(), Loader=loader)["config"]
    values = {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{PROJECT}:")}
    return values, config["aws:region"]


def mutate(stack: str, edits: dict) -> tuple[dict, str]:
    values, region = stack_values(stack)
    values = copy.deepcopy(values)
    for dotted, value in edits.items():
        node = values
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return values, region


def problems(stack: str, edits: dict) -> dict[str, str]:
    values, region = mutate(stack, edits)
    try:
        load_settings(values, project=PROJECT, stack=stack, region=region)
    except SettingsError as err:
        return {p.path: p.message for p in err.problems}
    return {}


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_the_shipped_stacks_pass(stack):
    assert problems(stack, {}) == {}


@pytest.mark.parametrize(
    ("stack", "edits", "path", "words"),
    [
        # The production verification Job throttled by its own client's tier, or blocked by the WAF.
        ("prod", {"edge.rateLimits.tiers.interactive.requestsPerMinute": 1}, "verification.client",
         ["may send 1 requests a minute", "429"]),
        ("prod", {"edge.waf.ipRateLimit": 10}, "verification.maxRequests", ["per-IP", "403"]),
        ("prod", {"edge.waf.apiKeyRateLimit": 10}, "verification.maxRequests", ["per-key", "403"]),
        # Output and prompt lengths the server refuses.
        ("prod", {"verification.osl": {"mean": 16000, "spread": 0}}, "verification.osl",
         ["serving.maxSeqLen (16384)"]),
        ("prod", {"capacity.isl": 9000}, "capacity.isl", ["serving.maxInputLen (8192)"]),
        ("prod", {"capacity.osl": 15000}, "capacity.osl", ["17000 tokens", "maxSeqLen (16384)"]),
        # Capacity blocks exist for some families only.
        ("dev", {"nodePools.inference.capacityTypes": ["capacity-block"],
                 "nodePools.inference.reservationIds": ["cr-0123456789abcdef0"]},
         "nodePools.inference.capacityTypes", ["'g6.xlarge', 'g6.2xlarge'", "Capacity Blocks", "p5"]),
        # Explicit model control behind the public edge.
        ("prod", {"serving.server": {"modelControlMode": "explicit"}}, "serving.server.modelControlMode",
         ["edge.domain", "'none'"]),
        # Keys that do nothing on a Karpenter pool.
        ("dev", {"nodePools.inference.minSize": 1}, "nodePools.inference.minSize", ["Karpenter", "no minimum"]),
        ("dev", {"nodePools.inference.desiredSize": 1}, "nodePools.inference.desiredSize", ["Karpenter"]),
    ],
)  # fmt: skip
def test_contradictions_are_one_problem_naming_the_key(stack, edits, path, words):
    found = problems(stack, edits)
    assert list(found) == [path], found
    assert all(w in found[path] for w in words), found[path]


@pytest.mark.parametrize(
    ("stack", "edits"),
    [
        # A tier sized for the Job, a WAF limit above its rate.
        ("prod", {"edge.rateLimits.tiers.interactive.requestsPerMinute": 600}),
        ("prod", {"edge.waf.ipRateLimit": 1500}),
        # Exactly at the server's limits.
        ("prod", {"capacity.isl": 8192, "capacity.osl": 8192}),
        # Managed pools keep their minimum (npu: managed node groups).
        ("npu", {}),
        ("dev", {"nodePools.inference.minSize": 0}),
        # Serving explicit control without a public edge (dev has no edge.domain).
        (
            "dev",
            {
                "serving.server": {"modelControlMode": "explicit"},
                "edge": {},
                "verification.enabled": False,
                "loadTest.enabled": False,
            },
        ),
    ],
)
def test_the_consistent_side_passes(stack, edits):
    found = problems(stack, edits)
    assert not set(found) & CHECKED, found


# The keys the checks of this file report (other problems, e.g. the planner's, are not what is tested).
CHECKED = {
    "verification.client",
    "verification.maxRequests",
    "verification.osl",
    "capacity.isl",
    "capacity.osl",
    "nodePools.inference.minSize",
    "nodePools.inference.desiredSize",
    "nodePools.inference.capacityTypes",
    "serving.server.modelControlMode",
}


def test_a_p5_capacity_block_passes():
    found = problems(
        "prod",
        {
            "nodePools.inference.capacityTypes": ["capacity-block"],
            "nodePools.inference.reservationIds": ["cr-0123456789abcdef0"],
        },
    )
    assert not [p for p in found if p.startswith("nodePools.inference.capacityTypes")], found


def test_a_verification_url_over_plain_http_is_a_settings_problem_not_a_component_error():
    found = problems("dev", {"verification.enabled": True, "verification.url": "http://api.dev.example.com"})
    assert list(found) == ["verification.url"] and "https://" in found["verification.url"], found
    assert "verification.url" not in problems(
        "dev", {"verification.enabled": True, "verification.url": "https://api.dev.example.com"}
    )
