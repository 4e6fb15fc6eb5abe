"""secret-sync-allowed: a SecretProviderClass with secretObjects needs a secrets-store-csi-driver Release with
syncSecret.enabled: true (issue 17 §1). Passing and failing fixtures, the shipped stacks, and the exit
status of ``inferctl plan`` on a program that gets it wrong."""

from __future__ import annotations

import json
import textwrap

import pulumi_kubernetes as k8s
import pytest

from inference_platform.inferctl.cli import main
from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from tests.conftest import STACKS

RULE = "secret-sync-allowed"


def _program(*, sync: bool | None, secret_objects: bool = True, chart: str = "secrets-store-csi-driver"):
    def program():
        if sync is not None:
            values = {"syncSecret": {"enabled": sync}}
            if chart == "secrets-store-csi-driver-provider-aws":
                values = {"secrets-store-csi-driver": {"install": True, **values}}
            k8s.helm.v3.Release("driver", name="csi", chart=chart, version="1.6.0", values=values)
        spec = {"provider": "aws", "parameters": {"objects": "[]"}}
        if secret_objects:
            spec["secretObjects"] = [{"secretName": "api-keys", "type": "Opaque", "data": []}]
        k8s.apiextensions.CustomResource(
            "spc",
            api_version="secrets-store.csi.x-k8s.io/v1",
            kind="SecretProviderClass",
            metadata={"name": "edge-keys", "namespace": "envoy-gateway-system"},
            spec=spec,
        )

    return program


def test_a_class_that_syncs_without_a_syncing_driver_fails_naming_it(violations):
    for sync in (False, None):
        (found,) = violations(_program(sync=sync), RULE)
        assert found.mandatory and found.urn.endswith("::spc")
        assert "SecretProviderClass envoy-gateway-system/edge-keys" in found.message
        assert "api-keys" in found.message and "syncSecret.enabled: true" in found.message


@pytest.mark.parametrize(
    "program",
    [
        _program(sync=True),
        _program(sync=True, chart="oci://registry.example.com/charts/secrets-store-csi-driver"),
        _program(sync=True, chart="secrets-store-csi-driver-provider-aws"),
        # Mounting without secretObjects needs no sync RBAC at all.
        _program(sync=False, secret_objects=False),
    ],
    ids=["driver", "oci-driver", "provider-bundled-driver", "mount-only"],
)
def test_a_syncing_driver_or_no_secret_objects_passes(violations, program):
    assert violations(program, RULE) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_installs_a_driver_that_may_sync(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    assert any(r.type.endswith(":SecretProviderClass") and r.inputs["spec"].get("secretObjects") for r in resources)
    assert evaluate(resources, [p for p in POLICIES if p.name == RULE]) == []


def _plan_program(tmp_path, sync: bool):
    program = tmp_path / f"prog-{sync}"
    (program / "app").mkdir(parents=True)
    (program / "Pulumi.yaml").write_text("name: p\nruntime: python\nmain: app/\n")
    (program / "Pulumi.s.yaml").write_text("config: {}\n")
    (program / "app" / "__main__.py").write_text(
        textwrap.dedent(
            f"""\
            import pulumi
            import pulumi_kubernetes as k8s
            driver = k8s.helm.v3.Release("driver", name="csi", chart="secrets-store-csi-driver", version="1.6.0",
                                         values={{"syncSecret": {{"enabled": {sync}}}}},
                                         repository_opts={{"repo": "https://kubernetes-sigs.github.io/secrets-store-csi-driver/charts"}})
            # After the driver, which installs the SecretProviderClass CRD (custom-resources-after-crds).
            k8s.apiextensions.CustomResource(
                "spc", api_version="secrets-store.csi.x-k8s.io/v1", kind="SecretProviderClass",
                metadata={{"name": "edge-keys", "namespace": "edge"}},
                spec={{"provider": "aws", "parameters": {{}},
                      "secretObjects": [{{"secretName": "api-keys", "type": "Opaque", "data": []}}]}},
                opts=pulumi.ResourceOptions(depends_on=[driver]))
            """
        )
    )
    out = tmp_path / f"out-{sync}"
    return main(["plan", "--program", str(program), "--stack", "s", "--out", str(out), "--quiet"]), out


def test_inferctl_plan_exits_1_for_a_class_the_driver_may_not_sync(tmp_path):
    code, out = _plan_program(tmp_path, sync=False)
    assert code == 1
    found = [v for v in json.loads((out / "s.json").read_text())["policies"]["violations"] if v["policy"] == RULE]
    assert len(found) == 1 and "SecretProviderClass edge/edge-keys" in found[0]["message"]
    code, out = _plan_program(tmp_path, sync=True)
    assert code == 0, json.loads((out / "s.json").read_text())["policies"]["violations"]
