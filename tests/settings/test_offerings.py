"""A pool instance type not offered in its zones ends the plan with exit 2 naming the pool's key, the type
and where it is offered (catalog/offerings.py): by zone name where names are uniform (us-east-2),
by zone ID against the account's mapping where they are not (us-east-1, infra/foundation.py)."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.catalog import offerings
from inference_platform.inferctl.cli import main
from inference_platform.settings import SettingsError, load_settings
from tests.conftest import REPO


def stack_file(tmp_path, stack, change):
    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    pools = doc["config"]["inference-platform:nodePools"]
    change(pools)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(copy.deepcopy(doc)))
    return path


def plan(tmp_path, capsys, stack, file):
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(tmp_path / "out"), "--quiet"])
    return code, capsys.readouterr().err


def test_npu_trn1_pool_in_its_first_zone_is_refused_naming_the_zone_that_offers_it(tmp_path, capsys):
    file = stack_file(tmp_path, "npu", lambda pools: pools["trn1"].pop("availabilityZones"))
    code, err = plan(tmp_path, capsys, "npu", file)
    assert code == 2, err
    line = next(ln for ln in err.splitlines() if "- nodePools.trn1.availabilityZones:" in ln)
    assert "trn1.32xlarge" in line and "us-east-2a (use2-az1)" in line and "us-east-2c (use2-az3)" in line


def test_shipped_npu_pins_trn1_to_the_zone_offering_it():
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.npu.yaml").read_text())
    assert doc["config"]["inference-platform:nodePools"]["trn1"]["availabilityZones"] == ["us-east-2c"]


def test_a_type_the_region_lacks_names_the_instance_type():
    region = next(r for r in sorted(offerings.data()["regions"]) if not offerings.offered_in_region("trn1.32xlarge", r))
    values = {"tags": {"owner": "t", "costCenter": "c"}, "nodePools": {"trn": {"instanceTypes": ["trn1.32xlarge"]}}}
    with pytest.raises(SettingsError) as err:
        load_settings(values, project="p", stack="s", region=region)
    found = {p.path: p.message for p in err.value.problems}
    assert "at all" in found["nodePools.trn.instanceTypes[0]"], found


def test_prod_p5en_swap_is_refused_by_zone_id(tmp_path, capsys):
    """prod's comment suggests p5en: us-east-1 offers it in use1-az2 and use1-az6 only. The offline plan
    answers DescribeAvailabilityZones with moto's account mapping (us-east-1a=use1-az2, us-east-1b=use1-az4)."""
    file = stack_file(tmp_path, "prod", lambda pools: pools["inference"].update(instanceTypes=["p5en.48xlarge"]))
    code, err = plan(tmp_path, capsys, "prod", file)
    assert code == 2, err
    assert "nodePools.inference.availabilityZones" in err and "us-east-1b (use1-az4)" in err and "use1-az6" in err


def test_a_type_offered_in_fewer_zone_ids_than_asked_is_refused_by_settings(tmp_path, capsys):
    file = stack_file(tmp_path, "prod", lambda pools: pools["inference"].update(instanceTypes=["p6-b200.48xlarge"]))
    code, err = plan(tmp_path, capsys, "prod", file)
    assert code == 2, err
    line = next(ln for ln in err.splitlines() if "- nodePools.inference.availabilityZones:" in ln)
    assert "p6-b200.48xlarge" in line and "use1-az6" in line and "per account" in line


def test_the_system_node_group_types_are_checked_over_every_cluster_zone():
    # moto 5.2.5 .../region/ca-west-1.json.gz has no m7i.xlarge: the default system types need a change there.
    assert not offerings.offered_in_region("m7i.xlarge", "ca-west-1")
    with pytest.raises(SettingsError) as err:
        load_settings({"tags": {"owner": "t", "costCenter": "c"}}, project="p", stack="s", region="ca-west-1")
    found = {p.path: p.message for p in err.value.problems}
    assert "m7i.xlarge is not offered in ca-west-1 at all" in found["cluster.systemNodeGroup.instanceTypes"]
    values = {
        "tags": {"owner": "t", "costCenter": "c"},
        "cluster": {"systemNodeGroup": {"instanceTypes": ["m6i.xlarge"]}},
    }
    assert load_settings(values, project="p", stack="s", region="ca-west-1").cluster.system_node_group
