"""IAM documents of the edge's controllers, as plain data (no Pulumi).

- The AWS Load Balancer Controller: its published policy (``docs/install/iam_policy.json`` at tag
  v3.5.0 of kubernetes-sigs/aws-load-balancer-controller, kept verbatim beside this module) narrowed
  three ways:
  1. by cluster tag: the published policy only asks that a resource carry *a* controller cluster tag
     (``Null: aws:ResourceTag/elbv2.k8s.aws/cluster = false``); here it must carry *this* cluster's
     name, so no other cluster's controller can be used against our load balancers, target groups or
     security groups, and ours cannot touch theirs;
  2. by resource type, account and region: write actions the published policy grants on ``*`` get the
     ARNs of the only resource types they act on (load balancers, listeners, rules, target groups,
     security groups, web ACLs, the ELB service-linked role), in this account and region;
  3. by feature: WAF Classic (``waf-regional``) and Shield writes are dropped, since the controller
     runs with ``enableWaf=false`` and ``enableShield=false`` (WAFv2 only).
  Reads (Describe/Get/List) stay on ``*``: AWS offers no resource scoping for most of them.
- ExternalDNS: write access to record sets in the one hosted zone of ``edge.domain`` only.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, cast

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
PUBLISHED_POLICY = Path(__file__).with_name("load_balancer_controller_iam_policy.json")
_TAG_KEYS = (f"aws:ResourceTag/{CLUSTER_TAG}", f"aws:RequestTag/{CLUSTER_TAG}")


def published_load_balancer_controller_policy() -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(PUBLISHED_POLICY.read_text()))  # a policy document: one object


def load_balancer_controller_policy(
    *, cluster_name: str, account_id: str, region: str, partition: str = "aws"
) -> dict[str, Any]:
    """The published policy narrowed to this cluster, account, region and the features in use."""
    if not cluster_name:
        raise ValueError("cluster_name is required: it is the tag scope of every write permission")
    scope = {"p": partition, "r": region, "a": account_id}
    out = []
    for statement in copy.deepcopy(published_load_balancer_controller_policy())["Statement"]:
        statement["Action"] = [a for a in _as_list(statement["Action"]) if not a.startswith(_DROPPED)]
        condition = statement.get("Condition")
        if condition:
            null = condition.get("Null", {})
            for key in _TAG_KEYS:
                if null.get(key) == "false":  # "the tag is present" -> "the tag is this cluster"
                    del null[key]
                    condition.setdefault("StringEquals", {})[key] = cluster_name
            if "Null" in condition and not condition["Null"]:
                del condition["Null"]
        out += _scoped(statement, scope)
    return {"Version": "2012-10-17", "Statement": out}


def external_dns_policy(*, hosted_zone_id: str, partition: str = "aws") -> dict[str, Any]:
    """ExternalDNS's published AWS policy (docs/tutorials/aws.md) narrowed to one hosted zone."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "RecordsInTheApiZoneOnly",
                "Effect": "Allow",
                "Action": [
                    "route53:ChangeResourceRecordSets",
                    "route53:ListResourceRecordSets",
                    "route53:ListTagsForResources",
                ],
                "Resource": [f"arn:{partition}:route53:::hostedzone/{hosted_zone_id}"],
            },
            {"Sid": "FindTheZone", "Effect": "Allow", "Action": ["route53:ListHostedZones"], "Resource": ["*"]},
        ],
    }


# WAF Classic and Shield: features the controller runs without (enableWaf/enableShield false).
_DROPPED = ("waf-regional:Associate", "waf-regional:Disassociate", "shield:Create", "shield:Delete")
_READ_VERBS = ("Describe", "Get", "List")
_ELB = "arn:{p}:elasticloadbalancing:{r}:{a}:"
_LOAD_BALANCERS = (_ELB + "loadbalancer/app/*/*", _ELB + "loadbalancer/net/*/*")
_LISTENERS = (
    _ELB + "listener/app/*/*/*",
    _ELB + "listener/net/*/*/*",
    _ELB + "listener-rule/app/*/*/*",
    _ELB + "listener-rule/net/*/*/*",
)
_TARGET_GROUPS = (_ELB + "targetgroup/*/*",)
_SECURITY_GROUPS = ("arn:{p}:ec2:{r}:{a}:security-group/*",)
# The resource types each write action of the published policy acts on (AWS's service authorization
# reference for Elastic Load Balancing v2, EC2, WAFv2 and IAM).
_ACTION_RESOURCES: dict[str, tuple[str, ...]] = {
    "iam:CreateServiceLinkedRole": (
        "arn:{p}:iam::{a}:role/aws-service-role/elasticloadbalancing.amazonaws.com/AWSServiceRoleForElasticLoadBalancing",
    ),
    "wafv2:AssociateWebACL": ("arn:{p}:wafv2:{r}:{a}:regional/webacl/*/*", *_LOAD_BALANCERS),
    "wafv2:DisassociateWebACL": _LOAD_BALANCERS,
    "ec2:AuthorizeSecurityGroupIngress": _SECURITY_GROUPS,
    "ec2:RevokeSecurityGroupIngress": _SECURITY_GROUPS,
    "ec2:DeleteSecurityGroup": _SECURITY_GROUPS,
    "ec2:CreateSecurityGroup": (*_SECURITY_GROUPS, "arn:{p}:ec2:{r}:{a}:vpc/*"),
    "elasticloadbalancing:CreateLoadBalancer": _LOAD_BALANCERS,
    "elasticloadbalancing:CreateTargetGroup": _TARGET_GROUPS,
    "elasticloadbalancing:CreateListener": (*_LOAD_BALANCERS, *_LISTENERS),
    "elasticloadbalancing:DeleteListener": _LISTENERS,
    "elasticloadbalancing:CreateRule": _LISTENERS,
    "elasticloadbalancing:DeleteRule": _LISTENERS,
    "elasticloadbalancing:ModifyLoadBalancerAttributes": _LOAD_BALANCERS,
    "elasticloadbalancing:SetIpAddressType": _LOAD_BALANCERS,
    "elasticloadbalancing:SetSecurityGroups": _LOAD_BALANCERS,
    "elasticloadbalancing:SetSubnets": _LOAD_BALANCERS,
    "elasticloadbalancing:DeleteLoadBalancer": _LOAD_BALANCERS,
    "elasticloadbalancing:ModifyCapacityReservation": _LOAD_BALANCERS,
    "elasticloadbalancing:ModifyIpPools": _LOAD_BALANCERS,
    "elasticloadbalancing:ModifyTargetGroup": _TARGET_GROUPS,
    "elasticloadbalancing:ModifyTargetGroupAttributes": _TARGET_GROUPS,
    "elasticloadbalancing:DeleteTargetGroup": _TARGET_GROUPS,
    "elasticloadbalancing:ModifyListenerAttributes": _LISTENERS,
    "elasticloadbalancing:SetWebAcl": _LOAD_BALANCERS,
    "elasticloadbalancing:ModifyListener": _LISTENERS,
    "elasticloadbalancing:AddListenerCertificates": _LISTENERS,
    "elasticloadbalancing:RemoveListenerCertificates": _LISTENERS,
    "elasticloadbalancing:ModifyRule": _LISTENERS,
    "elasticloadbalancing:SetRulePriorities": _LISTENERS,
}


def _scoped(statement: dict[str, Any], scope: dict[str, str]) -> list[dict[str, Any]]:
    """The statement with account/region in its ARNs; a write on ``*`` split into reads on ``*`` and
    writes on the ARNs of the resource types they act on."""
    resources = [_here(r, scope) for r in _as_list(statement["Resource"])]
    actions = statement["Action"]
    if not actions:
        return []
    if resources != ["*"]:
        return [{**statement, "Resource": resources}]
    reads = [a for a in actions if a.split(":", 1)[1].startswith(_READ_VERBS)]
    writes = [a for a in actions if a not in reads]
    unknown = [a for a in writes if a not in _ACTION_RESOURCES]
    if unknown:
        raise ValueError(f"no resource scope known for {', '.join(unknown)}: extend _ACTION_RESOURCES")
    out = []
    if reads:
        out.append({**statement, "Action": reads, "Resource": "*"})
    if writes:
        arns = sorted({t.format(**scope) for a in writes for t in _ACTION_RESOURCES[a]})
        out.append({**statement, "Action": writes, "Resource": arns})
    return out


def _here(resource: str, scope: dict[str, str]) -> str:
    """``arn:aws:elasticloadbalancing:*:*:...`` -> this partition, region and account."""
    if resource == "*":
        return resource
    parts = resource.split(":", 5)
    parts[1] = scope["p"]
    if parts[3] == "*":
        parts[3] = scope["r"]
    if parts[4] == "*":
        parts[4] = scope["a"]
    return ":".join(parts)


def _as_list(value: Any) -> list[str]:
    return list(value) if isinstance(value, list) else [value]
