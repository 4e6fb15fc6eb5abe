"""Issue 29: the endpoint picker's pods are costed. prod routes through the picker (``edge.routing.mode:
inference-pool``): its release's replicas and requests, as a share of the cheapest system node type, appear in ``inferctl
cost``, the plan's summary and the PR comment, without changing the total (the system node group's line already prices
those nodes). dev routes with Envoy alone and shows none."""

from __future__ import annotations

import json

import pytest

from inference_platform import catalog
from inference_platform.catalog import endpoint_picker, load_generator, prices
from inference_platform.inferctl.cli import main as inferctl
from inference_platform.inferctl.cost.picker import picker_cost
from inference_platform.inferctl.cost.summary import estimate_for, resources_as_dicts
from inference_platform.inferctl.plan.diff import compare, render
from inference_platform.inferctl.plan.report import tree


@pytest.fixture(scope="module")
def prod(stack_plan):
    return stack_plan("prod")


def test_prods_picker_is_priced_as_its_share_of_a_system_node(prod):
    resources = resources_as_dicts(prod.run.resources)
    estimate = estimate_for(resources, prod.run.outputs, "prod")
    found = picker_cost(resources, estimate.region)
    assert found is not None
    # What the release renders (catalog.endpoint_picker.chart_values), against the cheapest system type.
    node = min((catalog.instance(t) for t in load_generator.system_node_types(resources)),
               key=lambda t: t.price_per_hour_usd)  # fmt: skip
    assert (found.replicas, found.cpu, found.memory_gib) == (endpoint_picker.REPLICAS, 1.0, 2.0)
    share = endpoint_picker.REPLICAS * max(1.0 / node.vcpu, 2.0 / node.ram_gib)
    assert found.node_share == pytest.approx(share)
    assert found.monthly == pytest.approx(
        share * prices.instance_hour(node.name, estimate.region) * prices.HOURS_PER_MONTH
    )
    assert 0 < found.monthly < estimate.monthly_expected
    line = next(line for line in tree(prod).splitlines() if line.startswith("Endpoint picker"))
    assert f"{found.replicas} replica(s)" in line and node.name in line and "not added to the total" in line


def test_inferctl_cost_and_the_pr_comment_name_it(prod, tmp_path, capsys):
    plan = tmp_path / "prod.json"
    plan.write_text(json.dumps({"stack": "prod", "resources": resources_as_dicts(prod.run.resources),
                                "outputs": prod.run.outputs}))  # fmt: skip
    assert inferctl(["cost", str(plan), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (
        out["endpointPicker"]["replicas"] == endpoint_picker.REPLICAS
        and out["endpointPicker"]["monthly_usd_expected"] > 0
    )
    head = json.loads(plan.read_text())
    comment = render([compare("prod", head, head)])
    assert "Endpoint picker (edge.routing inference-pool)" in comment


def test_a_stack_without_the_picker_shows_none(stack_plan):
    dev = stack_plan("dev")
    resources = resources_as_dicts(dev.run.resources)
    assert picker_cost(resources, "us-west-2") is None
    assert "Endpoint picker" not in tree(dev)
