"""What ``costing`` reads from a plan besides prices: the types AWS does not bill, Kubernetes
quantities, the ALBs the AWS Load Balancer Controller makes from Ingress groups, and the accelerators
workloads pin to each pool (with the KEDA schedule that bounds them by time of day, ``node_hours``).

Pure Python, no Pulumi; resources are plain dicts (``type``, ``urn``, ``name``, ``inputs`` ...).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from inference_platform.catalog import instances as catalog
from inference_platform.planners import node_hours
from inference_platform.planners.node_hours import Load
from inference_platform.planners.quantities import parse_quantity

NODE_GROUP: Final = "aws:eks/nodeGroup:NodeGroup"
KARPENTER_POOL: Final = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS: Final = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
LAUNCH_TEMPLATE: Final = "aws:ec2/launchTemplate:LaunchTemplate"
POOL_LABEL: Final = "node-pool"
INGRESS: Final = "kubernetes:networking.k8s.io/v1:Ingress"
INGRESS_CLASS: Final = "kubernetes:networking.k8s.io/v1:IngressClass"
INGRESS_CLASS_PARAMS: Final = "kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams"
ALB_CONTROLLER: Final = "ingress.k8s.aws/alb"
ACCELERATOR_RESOURCES: Final = (catalog.RESOURCE_NVIDIA_GPU, catalog.RESOURCE_NEURON_DEVICE)
WORKLOAD_KINDS: Final[dict[str, str]] = {
    "kubernetes:apps/v1:Deployment": "Deployment",
    "kubernetes:apps/v1:StatefulSet": "StatefulSet",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": "LeaderWorkerSet",
}
GIB: Final = 2**30

# AWS bills nothing for these (or bills them through a priced resource, named in the reason).
FREE: Final[dict[str, str]] = {
    "aws:ec2/vpc:Vpc": "no charge",
    "aws:ec2/subnet:Subnet": "no charge",
    "aws:ec2/routeTable:RouteTable": "no charge",
    "aws:ec2/route:Route": "no charge",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "no charge",
    "aws:ec2/internetGateway:InternetGateway": "no charge (data out is billed per GB, not estimated)",
    "aws:ec2/securityGroup:SecurityGroup": "no charge",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": "no charge",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "no charge",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "no charge",
    "aws:ec2/placementGroup:PlacementGroup": "no charge",
    "aws:ec2/launchTemplate:LaunchTemplate": "priced with its node group (instances and volumes)",
    "aws:ec2/flowLog:FlowLog": "priced with its log group (vended-log ingestion)",
    "aws:autoscaling/tag:Tag": "no charge",
    "aws:iam/role:Role": "no charge",
    "aws:iam/rolePolicy:RolePolicy": "no charge",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "no charge",
    "aws:iam/policy:Policy": "no charge",
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": "no charge",
    "aws:iam/instanceProfile:InstanceProfile": "no charge",
    "aws:eks/addon:Addon": "no charge (add-on pods run on priced nodes)",
    "aws:eks/accessEntry:AccessEntry": "no charge",
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": "no charge",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": "no charge",
    "aws:kms/alias:Alias": "no charge",
    "aws:kms/grant:Grant": "no charge",
    "aws:secretsmanager/secretVersion:SecretVersion": "priced with its secret",
    "aws:s3/bucketPolicy:BucketPolicy": "no charge",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": "no charge",
    "aws:s3/bucketVersioning:BucketVersioning": "no charge (old versions count in the bucket's GiB)",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": "no charge",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": "no charge",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": "no charge",
    "aws:s3/bucketLogging:BucketLogging": "priced with the log bucket",
    "aws:s3/bucketNotification:BucketNotification": "no charge",
    "aws:ecr/lifecyclePolicy:LifecyclePolicy": "no charge",
    "aws:ecr/repositoryPolicy:RepositoryPolicy": "no charge",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": "no charge (S3 requests billed by S3)",
    "aws:cloudwatch/eventRule:EventRule": "no charge for AWS service events",
    "aws:cloudwatch/eventTarget:EventTarget": "no charge",
    "aws:sqs/queuePolicy:QueuePolicy": "no charge",
    "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy": "no charge",
    "aws:sqs/queue:Queue": "first 1M requests a month are free; interruption events are far fewer",
    "aws:acm/certificate:Certificate": "public ACM certificates are free",
    "aws:elasticache/subnetGroup:SubnetGroup": "no charge",
    "aws:elasticache/parameterGroup:ParameterGroup": "no charge",
    "aws:acm/certificateValidation:CertificateValidation": "no charge",
    "aws:route53/record:Record": "no charge beyond queries (not estimated)",
    "aws:wafv2/webAclAssociation:WebAclAssociation": "no charge",
    "aws:lb/listener:Listener": "priced with its load balancer",
    "aws:lb/targetGroup:TargetGroup": "priced with its load balancer",
    "aws:lb/listenerRule:ListenerRule": "priced with its load balancer",
    "random:index/randomPassword:RandomPassword": "not a cloud resource",
    "random:index/randomId:RandomId": "not a cloud resource",
}
FREE_PREFIXES: Final[dict[str, str]] = {
    "kubernetes:": "runs on the priced nodes",
    "pulumi:providers:": "not a cloud resource",
}


class QuantityError(ValueError):
    """A value that is neither a number nor a Kubernetes quantity; the line it prices becomes unknown."""


def get(obj: Any, path: str, default: Any = None) -> Any:
    """``obj`` at a dotted ``path`` of mapping keys, else ``default``."""
    for part in path.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return default
        obj = obj[part]
    return obj


def number(value: Any, what: str, default: float = 0.0) -> float:
    """A count: numbers as they cross protobuf (floats) or Kubernetes quantities (``"4"``, ``"500m"``,
    ``"1k"``); ``default`` when absent, QuantityError naming ``what`` when unreadable."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise QuantityError(f"{what}: {value!r} is not a number")
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(parse_quantity(value))
    except (ValueError, TypeError) as err:
        raise QuantityError(f"{what}: cannot read {value!r} as a Kubernetes quantity ({err})") from None


def gib(value: Any, what: str, default: float = 0.0) -> float:
    """A size in GiB: a number is GiB already (AWS inputs such as ``volumeSize: 500``); a string is a
    Kubernetes quantity in bytes (Karpenter's ``volumeSize: "200Gi"``)."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return default if value is None else float(value)
    return number(value, what) / GIB


def alb_groups(resources: list[Mapping[str, Any]]) -> dict[str, tuple[str, bool]]:
    """Ingresses the AWS Load Balancer Controller turns into ALBs: urn -> (group, first of its group).
    One ALB serves a group (``group.name`` of the class parameters or the annotation); an Ingress
    without a group gets its own."""
    params = {get(r, "inputs.metadata.name"): get(r, "inputs.spec.group.name") for r in resources
              if r.get("type") == INGRESS_CLASS_PARAMS}  # fmt: skip
    classes = {}
    for r in resources:
        if r.get("type") == INGRESS_CLASS and get(r, "inputs.spec.controller") == ALB_CONTROLLER:
            classes[get(r, "inputs.metadata.name")] = params.get(get(r, "inputs.spec.parameters.name"))
    seen: set[str] = set()
    out: dict[str, tuple[str, bool]] = {}
    for r in resources:
        if r.get("type") != INGRESS:
            continue
        meta = get(r, "inputs.metadata", {}) or {}
        cls = get(r, "inputs.spec.ingressClassName")
        if cls not in classes:
            continue
        group = (meta.get("annotations") or {}).get("alb.ingress.kubernetes.io/group.name") or classes[cls]
        group = group or f"{meta.get('namespace', 'default')}/{meta.get('name', r.get('name'))}"
        out[str(r.get("urn"))] = (group, group not in seen)
        seen.add(group)
    return out


@dataclass(frozen=True)
class PoolDemand:
    """What the workloads pinned to each pool ask for; ``unreadable`` names pools whose demand a bad
    quantity hides (their lines become unknown)."""

    loads: dict[str, list[Load]]
    unreadable: dict[str, str]


def pool_demand(resources: list[Mapping[str, Any]]) -> PoolDemand:
    """Accelerators the workloads pinned to each pool (``node-pool`` affinity or selector) request per
    replica, their planned replicas and their schedule. A LeaderWorkerSet replica is a group: its leader
    and (size - 1) workers, each on the pool its own template pins (the leader uses the worker template
    when it has none, as LeaderWorkerSet does)."""
    schedules = node_hours.read_schedules(resources)
    loads: dict[str, list[Load]] = defaultdict(list)
    unreadable: dict[str, str] = {}
    for r in resources:
        kind = WORKLOAD_KINDS.get(str(r.get("type")))
        if kind is None:
            continue
        spec = get(r, "inputs.spec", {}) or {}
        meta = get(r, "inputs.metadata", {}) or {}
        name = str(meta.get("name") or r.get("name", ""))
        schedule = schedules.get((str(meta.get("namespace") or "default"), kind, name))
        if kind == "LeaderWorkerSet":
            lwt = spec.get("leaderWorkerTemplate") or {}
            worker = get(lwt, "workerTemplate.spec", {}) or {}
            leader = get(lwt, "leaderTemplate.spec", None) or worker
            try:
                size = int(number(lwt.get("size"), f"{name}: leaderWorkerTemplate.size", 1))
            except QuantityError as err:
                size = 1
                for named in filter(None, (_pool_of(leader), _pool_of(worker))):
                    unreadable.setdefault(named, str(err))
            pods = [(leader, 1), (worker, max(0, size - 1))]
        else:
            pods = [(get(spec, "template.spec", {}) or {}, 1)]
        per_pool: dict[str, float] = defaultdict(float)
        for pod, count in pods:
            pool = _pool_of(pod)
            if not pool or not count:
                continue
            try:
                per_pool[pool] += count * _accelerators(pod, name)
            except QuantityError as err:
                unreadable.setdefault(pool, str(err))
        try:
            replicas = int(number(spec.get("replicas"), f"{name}: spec.replicas", 1))
        except QuantityError as err:
            for pool in per_pool:
                unreadable.setdefault(pool, str(err))
            continue
        for pool, accel in per_pool.items():
            if accel:
                loads[pool].append(Load(name, pool, accel, replicas, schedule))
    return PoolDemand(dict(loads), unreadable)


def _pool_of(pod: Mapping[str, Any]) -> str | None:
    pools: list[Any] = []
    selector = get(pod, "nodeSelector", {}) or {}
    if POOL_LABEL in selector:
        pools = [selector[POOL_LABEL]]
    for term in get(pod, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                    []) or []:  # fmt: skip
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == POOL_LABEL and expr.get("operator") == "In":
                pools = list(expr.get("values") or [])
    return str(pools[0]) if pools else None


def _accelerators(pod: Mapping[str, Any], workload: str) -> float:
    total = 0.0
    for container in pod.get("containers") or []:
        limits = get(container, "resources.limits", {}) or {}  # resource names contain dots: index directly
        total += sum(number(limits.get(k), f"{workload}: limits.{k}") for k in ACCELERATOR_RESOURCES)
    return total
