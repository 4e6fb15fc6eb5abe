"""Another team's program with one resource of every class of hole issue 9 §6 and issue 18 §3 name
(tests/fixtures/insecure_classes_program), checked the way users check theirs: `inferctl plan --program`.
Before the fix, every one of these passed the pack."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from inference_platform.inferctl.cli import main

PROGRAM = Path(__file__).resolve().parents[2] / "fixtures" / "insecure_classes_program"

# policy -> the resources of the fixture it must name
EXPECTED = {
    "no-world-ingress": {"ssh-low", "ssh-high"},  # 0.0.0.0/1 + 128.0.0.0/1
    "eks-endpoint-not-public": {"cluster"},  # the same halves as publicAccessCidrs
    "iam-no-wildcard-write": {"writes-everywhere"},  # arn:aws:s3:::*/*
    "no-anonymous-principals": {"anyone", "secret-for-anyone"},
    "iam-no-admin-managed-policies": {"admin"},
    "s3-access-point-public-access-block": {"open-access-point"},
    "no-secret-values": {"tool", "literal"},  # env under an innocent name; Secret data
    "workloads-non-root": {"tool"},
    "workloads-image-provenance": {"tool"},  # :latest from ghcr.io
    "workloads-not-in-default": {"tool"},
    "services-load-balancer-source-ranges": {"public"},
    "persistent-volumes-no-host-path": {"node-disk"},
    "workload-patches-not-privileged": {"aws-node-privileged"},
    "rbac-no-cluster-admin-for-service-accounts": {"ci-admin"},
    "accelerators-spot-only": {"gpu"},  # an Auto Scaling group, not a node group
    "deletion-windows": {"key", "secret"},
    # issue 18 §3
    "lb-listeners-no-plain-http": {"plain-http"},
    "lb-listeners-tls13": {"old-tls"},
    "lb-internet-facing-waf": {"direct-alb"},
    "edge-web-acl-guards": {"counting-acl"},
    "acm-certificate-dns-validated": {"weak-imported"},
    "rate-limit-store-encrypted": {"standalone-cache", "open-serverless", "nopass-user", "default-user-group"},
    "public-routes-allow-listed": {"prefix-route", "tcp-route"},
    "inference-routes-authenticated": {"prefix-route", "tcp-route", "keyless-auth"},
    "log-groups-encrypted-retained": {"forever-logs"},
    "model-objects-not-expired": {"expire-models"},
    "autoscaling-within-accelerator-capacity": {"unbounded-scaler", "wide-hpa", "gpu-jobs"},
    "accelerator-pods-bounded": {"gpu-cron", "gpu-pod"},
    "helm-charts-pinned": {"local-chart", "archive-release"},
}


def test_every_class_of_hole_is_refused(tmp_path, capsys):
    args = ["plan", "--program", str(PROGRAM), "--stack", "test", "--out", str(tmp_path), "--quiet",
            "--policy-config", str(PROGRAM / "policy-config.json")]  # fmt: skip
    assert main(args) == 1
    doc = json.loads((tmp_path / "test.json").read_text())
    found: dict[str, set[str]] = defaultdict(set)
    for violation in doc["policies"]["violations"]:
        assert violation["level"] == "mandatory", violation
        found[violation["policy"]].add((violation.get("urn") or "").rsplit("::", 1)[-1])
    for policy, names in EXPECTED.items():
        assert names <= found[policy], f"{policy}: expected {sorted(names)}, got {sorted(found[policy])}"
    budget = [v["message"] for v in doc["policies"]["violations"] if v["policy"] == "accelerator-budget"]
    assert budget and "gpu 16 (2 instances x 8)" in budget[0]
    assert "mandatory" in capsys.readouterr().out
