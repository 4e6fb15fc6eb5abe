"""Issue 18 §1 through the real command: each example of the issue, written in a stack file as YAML has
it (``.inf``, ``.nan``, ``true``, CR/LF), makes `inferctl plan` exit 2 with one line naming its key, no
traceback, and nothing planned or rendered."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.inferctl.cli import main
from tests.conftest import REPO


def stack_text(stack: str, section: str, dotted: str, value_yaml: str) -> str:
    """The shipped stack file with ``section.dotted`` set to ``value_yaml`` written verbatim in YAML."""
    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    config = doc["config"]
    qualified = f"inference-platform:{section}"
    node = config.setdefault(qualified, {})
    node = copy.deepcopy(node)
    config[qualified] = node
    *parents, last = dotted.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = "__VALUE__"
    return yaml.safe_dump(doc).replace("__VALUE__", value_yaml)


EXAMPLES = [
    ("dev", "autoscaling", "targetRequestsPerReplica", ".inf", "autoscaling.targetRequestsPerReplica", "finite"),
    ("prod", "capacity", "tokensPerDay", ".inf", "capacity.tokensPerDay", "finite"),
    ("prod", "capacity", "tokensPerDay", ".nan", "capacity.tokensPerDay", "finite"),
    ("dev", "observability", "alerts.queueSeconds", ".inf", "observability.alerts.queueSeconds", "finite"),
    ("dev", "edge", "idleTimeoutSeconds", "true", "edge.idleTimeoutSeconds", "boolean"),
    ("dev", "edge", "rateLimits.tiers.standard.requestsPerMinute", "true",
     "edge.rateLimits.tiers.standard.requestsPerMinute", "boolean"),
    ("dev", "edge", "circuitBreaker.maxConnections", "4294967296", "edge.circuitBreaker.maxConnections", "4294967295"),
    ("dev", "edge", "tlsPolicy", "ELBSecurityPolicy-TLS13-1-2-Res-2031-01", "edge.tlsPolicy", "not an ALB"),
    ("dev", "edge", "redis.nodeType", "cache.t4g.mega", "edge.redis.nodeType", "not an ElastiCache"),
    ("dev", "autoscaling", "night.timezone", "localtime", "autoscaling.night.timezone", "IANA"),
    ("prod", "verification", "url", '"https://api.example.com/\\r\\nx: $(id)"', "verification.url", "'\\r'"),
    ("prod", "verification", "prometheusUrl", "file:///etc/passwd", "verification.prometheusUrl", "http://"),
    ("prod", "verification", "url", "https://user:pw@api.example.com", "verification.url", "credentials"),
    ("dev", "nodePools", "inference.minSize", "1", "nodePools.inference.minSize", "Karpenter"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("stack", "section", "dotted", "value", "path", "words"), EXAMPLES, ids=[f"{e[4]}={e[3]}" for e in EXAMPLES]
)
def test_the_issue_examples_exit_2_naming_the_key(tmp_path, capsys, stack, section, dotted, value, path, words):
    file = tmp_path / f"Pulumi.{stack}.yaml"
    file.write_text(stack_text(stack, section, dotted, value))
    out = tmp_path / "out"
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "program failed" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].strip().startswith(f"- {path}:") and words in lines[0], err
    assert not out.exists() or not any(out.rglob("*.yaml")), "nothing is rendered"
