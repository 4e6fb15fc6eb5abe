"""Physical names AWS would refuse: one table, each row a name property of one resource type with AWS's
length limit and pattern and where they are written down.

The offline plan never calls AWS, so a name over its limit (or ending on ``-``, or with a character the
service refuses) only shows at ``pulumi up``, half-way through. Every row cites its source, read at the
versions this project pins:

- ``botocore 1.44.8``: the service models shipped in the venv
  (``botocore/data/<service>/<api-version>/service-2.json.gz``), whose shapes carry ``min``/``max``/
  ``pattern`` and whose member documentation states the rest (the AWS API reference is generated from
  the same models).
- ``pulumi-aws 7.51.1``: the SDK's docstrings in ``pulumi_aws/<module>/<resource>.py`` where botocore's
  model is silent (EKS node group names, S3 buckets).
- ``terraform-provider-aws`` (the provider behind pulumi-aws): a ``*_prefix`` property gets 26 characters
  appended (``id.UniqueIDSuffixLength``; ``internal/service/iam/role.go``: ``roleNamePrefixMaxLen =
  roleNameMaxLen - UniqueIDSuffixLength``, so 64 - 26 = 38, as pulumi-aws documents for event rule and S3
  bucket prefixes). A prefix is checked as ``prefix + 26 digits`` against the row.
- Pulumi autonaming: a resource given neither property is named ``<logical name>-<7 hex digits>``.

The same table names the physical names two stacks must not share (``colliding_names``), which
``inferctl plan --stack A --stack B`` checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy

PROVIDER_SUFFIX = "0" * 26
"""What the provider appends to a ``*_prefix`` (a timestamp and counter, 26 digits)."""
AUTONAME_SUFFIX = "-0000000"
"""What Pulumi appends to a logical name when it names the resource (``-`` and 7 hex digits)."""

BOTOCORE = "botocore 1.44.8 botocore/data"
PULUMI_AWS = "pulumi-aws 7.51.1 pulumi_aws"

# Patterns used by more than one row.
_ELASTICACHE_ID = r"[a-zA-Z](?!.*--)[a-zA-Z0-9-]*(?<!-)"  # letter first, no "--", no trailing "-"
_ELB_NAME = r"(?!internal-)[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"  # no leading/trailing "-"
_IAM_NAME = r"[\w+=,.@-]+"
_WAF_ENTITY = r"[\w\-]+"
_WAF_METRIC = r"[\w#:\.\-/]+"


@dataclass(frozen=True)
class NameRule:
    """One name property of one resource type, as AWS limits it."""

    type: str
    """The resource type token (``aws:eks/cluster:Cluster``)."""
    prop: str
    """The property holding the name; ``a[].b`` reads ``b`` of every item of list ``a``."""
    what: str
    """What the name is, for the message (``EKS cluster name``)."""
    max: int | None
    """Most characters AWS takes (None: the source gives no maximum)."""
    pattern: str
    """What AWS takes, matched against the whole name."""
    source: str
    """Where the limit and pattern are written (file and version, or API operation)."""
    min: int = 1
    prefix: str | None = None
    """The property naming a prefix the provider completes with 26 characters, if the type has one."""
    autonamed: bool = False
    """Pulumi names the resource ``<logical name>-<7 hex>`` when neither property is set."""
    global_scope: bool = False
    """Names are unique per account (IAM) or worldwide (S3), not per region."""

    def problem(self, name: str) -> str | None:
        """Why AWS would refuse ``name`` here, or None."""
        if self.max is not None and len(name) > self.max:
            return f"has {len(name)} characters; at most {self.max}"
        if len(name) < self.min:
            return f"has {len(name)} characters; at least {self.min}"
        if not re.fullmatch(self.pattern, name):
            return f"does not match {self.pattern}"
        return None


NAME_RULES: tuple[NameRule, ...] = (
    NameRule(type="aws:eks/cluster:Cluster", prop="name", what="EKS cluster name", max=100,
             pattern=r"[0-9A-Za-z][A-Za-z0-9\-_]*",
             source=f"{BOTOCORE}/eks/2017-11-01 shape ClusterName (CreateCluster name)"),
    NameRule(type="aws:eks/nodeGroup:NodeGroup", prop="nodeGroupName", prefix="nodeGroupNamePrefix",
             what="EKS node group name", max=63, pattern=r"[0-9A-Za-z][A-Za-z0-9\-_]*",
             source=f"{PULUMI_AWS}/eks/node_group.py node_group_name (CreateNodegroup: botocore's String has no limit)"),
    NameRule(type="aws:ecr/repository:Repository", prop="name", what="ECR repository name", min=2, max=256,
             pattern=r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*",
             source=f"{BOTOCORE}/ecr/2015-09-21 shape RepositoryName (CreateRepository repositoryName)"),
    NameRule(type="aws:kms/alias:Alias", prop="name", prefix="namePrefix", what="KMS alias", max=256,
             pattern=r"alias/(?!aws/)[a-zA-Z0-9:/_-]+",
             source=f"{BOTOCORE}/kms/2014-11-01 shape AliasNameType + CreateAlias AliasName "
                    "(starts alias/, alias/aws/ is reserved)"),
    NameRule(type="aws:secretsmanager/secret:Secret", prop="name", prefix="namePrefix", what="secret name", max=512,
             pattern=r"[A-Za-z0-9/_+=.@-]+", autonamed=True,
             source=f"{BOTOCORE}/secretsmanager/2017-10-17 shape NameType + CreateSecret Name"),
    NameRule(type="aws:wafv2/webAcl:WebAcl", prop="name", prefix="namePrefix", what="WAF web ACL name", max=128,
             pattern=_WAF_ENTITY, autonamed=True,
             source=f"{BOTOCORE}/wafv2/2019-07-29 shape EntityName (CreateWebACL Name)"),
    NameRule(type="aws:wafv2/webAcl:WebAcl", prop="rules[].name", what="WAF rule name", max=128,
             pattern=_WAF_ENTITY, source=f"{BOTOCORE}/wafv2/2019-07-29 shape EntityName (Rule Name)"),
    NameRule(type="aws:wafv2/webAcl:WebAcl", prop="visibilityConfig.metricName", what="WAF metric name", max=255,
             pattern=_WAF_METRIC, source=f"{BOTOCORE}/wafv2/2019-07-29 shape MetricName (VisibilityConfig)"),
    NameRule(type="aws:wafv2/webAcl:WebAcl", prop="rules[].visibilityConfig.metricName", what="WAF rule metric name",
             max=255, pattern=_WAF_METRIC,
             source=f"{BOTOCORE}/wafv2/2019-07-29 shape MetricName (Rule VisibilityConfig)"),
    NameRule(type="aws:elasticache/replicationGroup:ReplicationGroup", prop="replicationGroupId",
             what="ElastiCache replication group id", max=40, pattern=_ELASTICACHE_ID,
             source=f"{BOTOCORE}/elasticache/2015-02-02 CreateReplicationGroup ReplicationGroupId "
                    "(1-40 letters, digits, hyphens; a letter first; no trailing hyphen or '--')"),
    NameRule(type="aws:elasticache/cluster:Cluster", prop="clusterId", what="ElastiCache cluster id", max=50,
             pattern=_ELASTICACHE_ID,
             source=f"{BOTOCORE}/elasticache/2015-02-02 CreateCacheCluster CacheClusterId "
                    "(1-50 letters, digits, hyphens; a letter first; no trailing hyphen or '--')"),
    NameRule(type="aws:elasticache/user:User", prop="userId", what="ElastiCache user id", max=None,
             pattern=r"[a-zA-Z][a-zA-Z0-9\-]*", source=f"{BOTOCORE}/elasticache/2015-02-02 shape UserId (CreateUser)"),
    NameRule(type="aws:elasticache/userGroup:UserGroup", prop="userGroupId", what="ElastiCache user group id",
             max=None, pattern=r"[a-zA-Z][a-zA-Z0-9\-]*",
             source=f"{BOTOCORE}/elasticache/2015-02-02 CreateUserGroup UserGroupId (pattern of UserId)"),
    NameRule(type="aws:elasticache/subnetGroup:SubnetGroup", prop="name", what="ElastiCache subnet group name",
             max=255, pattern=r"[a-zA-Z0-9-]+",
             source=f"{BOTOCORE}/elasticache/2015-02-02 CreateCacheSubnetGroup CacheSubnetGroupName "
                    "(at most 255 letters, digits or hyphens)"),
    NameRule(type="aws:iam/role:Role", prop="name", prefix="namePrefix", what="IAM role name", max=64,
             pattern=_IAM_NAME, autonamed=True, global_scope=True,
             source=f"{BOTOCORE}/iam/2010-05-08 shape roleNameType (CreateRole RoleName); prefix 64 - 26 = 38 "
                    "(terraform-provider-aws internal/service/iam/role.go roleNamePrefixMaxLen)"),
    NameRule(type="aws:iam/policy:Policy", prop="name", prefix="namePrefix", what="IAM policy name", max=128,
             pattern=_IAM_NAME, autonamed=True, global_scope=True,
             source=f"{BOTOCORE}/iam/2010-05-08 shape policyNameType (CreatePolicy PolicyName)"),
    NameRule(type="aws:iam/rolePolicy:RolePolicy", prop="name", prefix="namePrefix", what="IAM inline policy name",
             max=128, pattern=_IAM_NAME, autonamed=True,
             source=f"{BOTOCORE}/iam/2010-05-08 shape policyNameType (PutRolePolicy PolicyName)"),
    NameRule(type="aws:iam/instanceProfile:InstanceProfile", prop="name", prefix="namePrefix",
             what="IAM instance profile name", max=128, pattern=_IAM_NAME, autonamed=True, global_scope=True,
             source=f"{BOTOCORE}/iam/2010-05-08 shape instanceProfileNameType (CreateInstanceProfile)"),
    *(
        NameRule(type=token, prop="bucket", prefix="bucketPrefix", what="S3 bucket name", min=3, max=63,
                 pattern=r"(?!xn--)(?!.*\.\.)[a-z0-9][a-z0-9.-]*[a-z0-9]", autonamed=True, global_scope=True,
                 source=f"{PULUMI_AWS}/s3/bucket.py bucket (lowercase, at most 63) and bucket_prefix (at most 37); "
                        "S3 user guide bucketnamingrules (3-63, letters digits . -, a letter or digit at each end)")
        for token in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
    ),
    NameRule(type="aws:ec2/launchTemplate:LaunchTemplate", prop="name", prefix="namePrefix",
             what="launch template name", min=3, max=128, pattern=r"[a-zA-Z0-9\(\)\.\-/_]+", autonamed=True,
             source=f"{BOTOCORE}/ec2/2016-11-15 shape LaunchTemplateName"),
    NameRule(type="aws:ec2/placementGroup:PlacementGroup", prop="name", what="placement group name", max=255,
             pattern=r"[\x20-\x7e]+", autonamed=True,
             source=f"{BOTOCORE}/ec2/2016-11-15 CreatePlacementGroup GroupName (up to 255 ASCII characters)"),
    NameRule(type="aws:ec2/securityGroup:SecurityGroup", prop="name", prefix="namePrefix",
             what="security group name", max=255, pattern=r"(?!sg-)[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]+",
             autonamed=True,
             source=f"{BOTOCORE}/ec2/2016-11-15 CreateSecurityGroup GroupName (up to 255; not sg-; its characters)"),
    NameRule(type="aws:cloudwatch/logGroup:LogGroup", prop="name", prefix="namePrefix", what="log group name",
             max=512, pattern=r"[\.\-_/#A-Za-z0-9]+", autonamed=True,
             source=f"{BOTOCORE}/logs/2014-03-28 shape LogGroupName (CreateLogGroup)"),
    NameRule(type="aws:sqs/queue:Queue", prop="name", prefix="namePrefix", what="SQS queue name", max=80,
             pattern=r"[A-Za-z0-9_-]+(\.fifo)?", autonamed=True,
             source=f"{BOTOCORE}/sqs/2012-11-05 CreateQueue QueueName (up to 80; letters digits - _; .fifo)"),
    NameRule(type="aws:cloudwatch/eventRule:EventRule", prop="name", prefix="namePrefix",
             what="EventBridge rule name", max=64, pattern=r"[\.\-_A-Za-z0-9]+", autonamed=True,
             source=f"{BOTOCORE}/events/2015-10-07 shape RuleName (PutRule); prefix at most 38 "
                    f"({PULUMI_AWS}/cloudwatch/event_rule.py name_prefix)"),
    *(
        NameRule(type=token, prop="name", prefix="namePrefix", what="target group name", max=32, pattern=_ELB_NAME,
                 autonamed=True,
                 source=f"{BOTOCORE}/elbv2/2015-12-01 CreateTargetGroup Name (at most 32, letters digits -, "
                        f"no - at either end); prefix at most 6 ({PULUMI_AWS}/lb/target_group.py)")
        for token in ("aws:lb/targetGroup:TargetGroup", "aws:alb/targetGroup:TargetGroup")
    ),
    *(
        NameRule(type=token, prop="name", prefix="namePrefix", what="load balancer name", max=32, pattern=_ELB_NAME,
                 autonamed=True,
                 source=f"{BOTOCORE}/elbv2/2015-12-01 CreateLoadBalancer Name (at most 32, letters digits -, "
                        "no - at either end, not internal-)")
        for token in ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
    ),
)  # fmt: skip

RULES_BY_TYPE: dict[str, tuple[NameRule, ...]] = {}
for _rule in NAME_RULES:
    RULES_BY_TYPE[_rule.type] = (*RULES_BY_TYPE.get(_rule.type, ()), _rule)


@dataclass(frozen=True)
class PlannedName:
    """One physical name (or name prefix) a resource would be created with."""

    rule: NameRule
    value: str
    """The name as AWS would see it: a prefix completed, an autoname with its suffix."""
    given: str
    """What the program set (the prefix itself, or the logical name for an autoname)."""
    kind: str
    """``name``, ``prefix`` or ``autoname``."""


def planned_names(resource_type: str, props: Mapping[str, Any], logical_name: str) -> Iterator[PlannedName]:
    """Every name of the table the resource would be created with."""
    for rule in RULES_BY_TYPE.get(resource_type, ()):
        values = _values(props, rule.prop)
        if values:  # a value unknown until apply (not a string) is judged by the engine then
            yield from (PlannedName(rule, v, v, "name") for v in values if isinstance(v, str))
            continue
        prefix = props.get(rule.prefix) if rule.prefix else None
        if isinstance(prefix, str):
            yield PlannedName(rule, prefix + PROVIDER_SUFFIX, prefix, "prefix")
        elif prefix is None and rule.autonamed and "." not in rule.prop and "[]" not in rule.prop:
            yield PlannedName(rule, logical_name + AUTONAME_SUFFIX, logical_name, "autoname")


def _values(props: Any, path: str) -> list[Any]:
    current = [props]
    for part in path.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        found = []
        for item in current:
            value = item.get(key) if isinstance(item, Mapping) else None
            if value is None:
                continue
            if many:
                found += list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []
            else:
                found.append(value)
        current = found
    return current


def _message(name: PlannedName, problem: str) -> str:
    rule = name.rule
    if name.kind == "prefix":
        subject = f"{rule.what} prefix {rule.prefix}={name.given!r} (the provider appends 26 characters)"
    elif name.kind == "autoname":
        subject = f"{rule.what} autonamed from {name.given!r} ({name.value!r}: Pulumi appends '-' and 7 characters)"
    else:
        subject = f"{rule.what} {rule.prop}={name.value!r}"
    return f"{subject} {problem}: AWS refuses it ({rule.source})"


def _physical_names(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in RULES_BY_TYPE:
        return
    for name in planned_names(args.resource_type, args.props, args.name):
        problem = name.rule.problem(name.value)
        if problem:
            report(_message(name, problem))


@dataclass(frozen=True)
class Collision:
    what: str
    value: str
    urns: tuple[str, str]


def colliding_names(
    first: Iterable[Any], second: Iterable[Any], *, same_region: bool = True
) -> list[Collision]:  # fmt: skip
    """Physical names (and name prefixes) two stacks' resources share: in one account, the second stack's
    ``up`` fails on them (or both stacks manage one resource). ``first`` and ``second`` are recorded
    resources (``type``, ``inputs``, ``name``, ``urn``); autonames never collide (random suffix), nor
    names inside a resource (``rules[].name``: unique within their web ACL). Regional names collide
    only when both stacks are in one region."""

    def index(resources: Iterable[Any]) -> dict[tuple[str, str, str], str]:
        out: dict[tuple[str, str, str], str] = {}
        for r in resources:
            for name in planned_names(r.type, r.inputs or {}, r.name):
                nested = "." in name.rule.prop or "[]" in name.rule.prop
                if nested or name.kind == "autoname" or not (same_region or name.rule.global_scope):
                    continue
                key = (name.rule.type, name.rule.prop if name.kind == "name" else str(name.rule.prefix), name.given)
                out.setdefault(key, r.urn)
        return out

    theirs = index(second)
    return [
        Collision(f"{type_} {prop}", value, (urn, theirs[(type_, prop, value)]))
        for (type_, prop, value), urn in sorted(index(first).items())
        if (type_, prop, value) in theirs
    ]


POLICIES = [
    ResourceValidationPolicy(
        name="aws-physical-names",
        description="Every physical name (or name prefix) fits its AWS length limit and pattern "
        "(one table, policies/rules/names.py, each row citing its source).",
        validate=_physical_names,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
