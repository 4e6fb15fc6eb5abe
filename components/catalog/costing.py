"""Monthly cost of a stack from its recorded resources: per resource, per area, min/expected/max.

Pure Python, no Pulumi: it reads resources as plain dicts (``type``, ``urn``, ``name``, ``custom``,
``id``, ``inputs``), as ``inferctl plan`` writes them and CrossGuard hands them to stack policies.

- EC2: each managed node group and Karpenter NodePool at its minimum, expected and maximum node count.
  Expected = the nodes the workloads pinned to the pool (``node-pool`` affinity) need, at least the
  desired size; a night schedule (``Usage.night_hours`` at the pool's minimum) lowers it. Spot pools are
  priced at ``Usage.spot_factor`` (a pool allowing spot and on-demand at ``Usage.mixed_spot_share``).
  Root volumes (launch template / EC2NodeClass) are EBS per node.
- Services: ``prices`` list prices x hours (730 a month) or GiB; usage-driven parts (NAT and endpoint
  data, ALB LCUs, log volume, bucket size) come from ``Usage``, whose defaults are stated assumptions.
- Types the table does not know are *unknown* (reported, never 0). Types AWS does not bill (IAM, routes,
  security groups, Kubernetes objects, which run on the priced nodes) are *free*, each by name.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from components.catalog import instances as catalog
from components.catalog import load_generator, prices
from components.catalog.instances import CatalogError

H: Final = prices.HOURS_PER_MONTH
Status = Literal["priced", "free", "unknown"]

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
WORKLOAD_KINDS: Final = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet",
                         "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")  # fmt: skip

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


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Assumptions for the usage-driven parts (defaults are estimates, not measurements)."""

    nat_gib_per_gateway: float = 100.0
    """Data a NAT gateway processes a month; model pulls use the S3 gateway endpoint, not NAT."""
    endpoint_gib_per_endpoint: float = 50.0
    alb_lcu: float = 1.0
    """Average LCUs of each ALB (1 LCU: 25 new connections/s, 3,000 active, 1 GB/h)."""
    log_gib_per_group: float = 5.0
    """Ingested a month per log group; storage is that times the retention in months (capped at 12)."""
    s3_model_gib: float = 500.0
    s3_other_gib: float = 50.0
    ecr_gib: float = 100.0
    spot_factor: float = prices.DEFAULT_SPOT_FACTOR
    mixed_spot_share: float = 0.8
    """Share of spot in a pool allowed both spot and on-demand (Karpenter prefers the cheaper)."""
    night_hours: float = 0.0
    """Hours a day accelerator pools sit at their minimum (0: no night schedule)."""
    load_test_runs: float = 4.0
    """Runs a month of the in-cluster load test (each ``pulumi up`` that changes it runs it once)."""

    @classmethod
    def from_config(cls, values: Mapping[str, Any] | None) -> Usage:
        """From camelCase keys (policy config ``assumptions``), unknown keys ignored."""
        if not values:
            return cls()
        names = {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower().replace("gi_b", "gib"): v for k, v in values.items()}
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: float(v) for k, v in names.items() if k in known})


@dataclass(frozen=True)
class Line:
    urn: str
    type: str
    name: str
    area: str
    category: str
    status: Status
    monthly_min: float | None
    monthly_expected: float | None
    monthly_max: float | None
    basis: str
    spot_share: float = 0.0
    """EC2 pools: share of nodes on spot (0 for everything else)."""
    monthly_max_on_demand: float | None = None
    """EC2 pools: the maximum if every node ran on demand."""


@dataclass(frozen=True)
class Estimate:
    region: str
    lines: tuple[Line, ...]
    usage: Usage = field(default_factory=Usage)

    def _sum(self, attr: str, lines: Iterable[Line] | None = None) -> float:
        return sum(getattr(line, attr) or 0.0 for line in (self.lines if lines is None else lines))

    @property
    def monthly_min(self) -> float:
        return self._sum("monthly_min")

    @property
    def monthly_expected(self) -> float:
        return self._sum("monthly_expected")

    @property
    def monthly_max(self) -> float:
        return self._sum("monthly_max")

    @property
    def unknown(self) -> tuple[Line, ...]:
        return tuple(line for line in self.lines if line.status == "unknown")

    def by(self, key: str) -> dict[str, tuple[float, float, float]]:
        """(min, expected, max) per ``area`` or ``category``."""
        groups: dict[str, list[Line]] = defaultdict(list)
        for line in self.lines:
            if line.status == "priced":
                groups[getattr(line, key)].append(line)
        return {
            k: (self._sum("monthly_min", v), self._sum("monthly_expected", v), self._sum("monthly_max", v))
            for k, v in sorted(groups.items())
        }

    def accelerator_pools(self) -> tuple[Line, ...]:
        return tuple(line for line in self.lines if line.category == "EC2 accelerators")


def area_of(urn: str) -> str:
    """The area of a resource: the module of its outermost ``inference:`` component, else ``stack``."""
    try:
        chain = urn.split("::")[2]
    except IndexError:
        return "stack"
    first = chain.split("$")[0]
    parts = first.split(":")
    return parts[1] if parts[0] == "inference" and len(parts) > 2 else "stack"


def plan_region(plan: Mapping[str, Any]) -> str:
    """The stack's region: the plan's ``region`` output, else the zone of any subnet."""
    outputs = plan.get("outputs") or {}
    if isinstance(outputs.get("region"), str):
        return outputs["region"]
    for r in plan.get("resources", []):
        zone = (r.get("inputs") or {}).get("availabilityZone")
        if isinstance(zone, str) and zone:
            return zone[:-1]
    raise prices.PriceError("the plan names no region (no `region` output, no subnet zone)")


def estimate(
    resources: Iterable[Mapping[str, Any]],
    *,
    region: str,
    usage: Usage | None = None,
) -> Estimate:
    """Price every custom resource; PriceError when the table lacks ``region``."""
    prices.region_pricing(region)
    use = usage or Usage()
    items = [r for r in resources if r.get("custom", True)]
    ctx = _Context(items, region, use)
    lines = [ctx.price(r) for r in items]
    return Estimate(region, tuple(line for line in lines if line is not None), use)


# --- internals -----------------------------------------------------------------------------------------


def _get(obj: Any, path: str, default: Any = None) -> Any:
    for part in path.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return default
        obj = obj[part]
    return obj


def _num(value: Any, default: float = 0.0) -> float:
    """Numbers arrive as floats, ints or Kubernetes quantities (``"4"``, ``"100Gi"``)."""
    if value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    match = re.fullmatch(r"\s*([0-9.]+)\s*(Gi|G|Ti|T|Mi)?\s*", str(value))
    if not match:
        return default
    scale = {"Ti": 1024, "T": 1000, "Gi": 1, "G": 1, "Mi": 1 / 1024, None: 1}[match.group(2)]
    return float(match.group(1)) * scale


class _Context:
    def __init__(self, resources: list[Mapping[str, Any]], region: str, usage: Usage) -> None:
        self.region = region
        self.usage = usage
        self.by_id = {r.get("id"): r for r in resources if r.get("id")}
        self.node_classes = {_get(r, "inputs.metadata.name"): r for r in resources if r.get("type") == NODE_CLASS}
        self.demand = _pool_demand(resources)
        self.system_types = load_generator.system_node_types(resources)
        self.alb_ingresses = _alb_groups(resources)
        # A zonal pool is one node group per zone, all labelled with the pool: they share its demand.
        self.shards: dict[str, int] = defaultdict(int)
        for r in resources:
            if r.get("type") == NODE_GROUP:
                self.shards[str(_get(r, f"inputs.labels.{POOL_LABEL}", ""))] += 1

    def line(self, r: Mapping[str, Any], category: str, status: Status, lo: float | None, mid: float | None,
             hi: float | None, basis: str) -> Line:  # fmt: skip
        return Line(r.get("urn", ""), r.get("type", ""), r.get("name", ""), area_of(r.get("urn", "")), category,
                    status, lo, mid, hi, basis)  # fmt: skip

    def fixed(self, r: Mapping[str, Any], category: str, monthly: float, basis: str) -> Line:
        return self.line(r, category, "priced", monthly, monthly, monthly, basis)

    def price(self, r: Mapping[str, Any]) -> Line | None:
        t = str(r.get("type", ""))
        inputs = r.get("inputs") or {}
        s = lambda p: prices.service(p, self.region)  # noqa: E731
        if t == NODE_GROUP:
            return self._node_group(r, inputs)
        if load_generator.is_load_test_workers(r):
            return self._load_test_workers(r, inputs)
        if t == KARPENTER_POOL:
            return self._karpenter(r, inputs)
        if t == "aws:eks/cluster:Cluster":
            return self.fixed(r, "EKS control plane", s(prices.EKS_CLUSTER_HOUR) * H, f"{H} h x $0.10")
        if t == "aws:ec2/natGateway:NatGateway":
            gib = self.usage.nat_gib_per_gateway
            m = s(prices.NAT_GATEWAY_HOUR) * H + s(prices.NAT_GATEWAY_GB) * gib
            return self.fixed(r, "NAT gateways", m, f"{H} h x $0.045 + {gib:g} GiB processed (assumed) x $0.045")
        if t == "aws:ec2/eip:Eip":
            return self.fixed(r, "public IPv4", s(prices.PUBLIC_IPV4_HOUR) * H, f"{H} h x $0.005 per public IPv4")
        if t == "aws:ec2/vpcEndpoint:VpcEndpoint":
            if inputs.get("vpcEndpointType", "Gateway") == "Gateway":
                return self.line(r, "VPC endpoints", "free", 0, 0, 0, "gateway endpoints are free")
            zones = max(1, len(inputs.get("subnetIds") or []))
            gib = self.usage.endpoint_gib_per_endpoint
            m = s(prices.INTERFACE_ENDPOINT_AZ_HOUR) * H * zones + s(prices.INTERFACE_ENDPOINT_GB) * gib
            return self.fixed(r, "VPC endpoints", m, f"{zones} AZ x {H} h x $0.01 + {gib:g} GiB (assumed) x $0.01")
        if t == "aws:lb/loadBalancer:LoadBalancer":
            if inputs.get("loadBalancerType", "application") != "application":
                return self.line(r, "load balancers", "unknown", None, None, None, "only ALBs are priced")
            lcu = self.usage.alb_lcu
            m = s(prices.ALB_HOUR) * H + s(prices.ALB_LCU_HOUR) * lcu * H
            return self.fixed(r, "load balancers", m, f"{H} h x $0.0225 + {lcu:g} LCU (assumed) x $0.008/h")
        if t == "aws:fsx/lustreFileSystem:LustreFileSystem":
            gib = _num(inputs.get("storageCapacity"))
            tier = int(_num(inputs.get("perUnitStorageThroughput"))) or None
            rate = prices.fsx_gb_month(str(inputs.get("deploymentType", "")), tier, self.region)
            if rate is None:
                return self.line(r, "FSx for Lustre", "unknown", None, None, None,
                                 f"no price for {inputs.get('deploymentType')} at {tier} MB/s/TiB")  # fmt: skip
            return self.fixed(r, "FSx for Lustre", gib * rate, f"{gib:,.0f} GiB x ${rate:.3f} ({tier} MB/s/TiB)")
        if t in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
            name = str(r.get("name", ""))
            models = "model" in name and "log" not in name
            gib = self.usage.s3_model_gib if models else self.usage.s3_other_gib
            return self.fixed(r, "S3", gib * s(prices.S3_STANDARD_GB_MONTH), f"{gib:g} GiB (assumed) x $0.023")
        if t == "aws:kms/key:Key":
            return self.fixed(r, "KMS", s(prices.KMS_KEY_MONTH), "$1 per key-month (requests not estimated)")
        if t == "aws:secretsmanager/secret:Secret":
            return self.fixed(r, "Secrets Manager", s(prices.SECRET_MONTH), "$0.40 per secret-month")
        if t == "aws:cloudwatch/logGroup:LogGroup":
            gib = self.usage.log_gib_per_group
            months = min(12.0, _num(inputs.get("retentionInDays"), 365) / 30)
            m = gib * s(prices.LOGS_INGEST_GB) + gib * months * s(prices.LOGS_STORE_GB_MONTH)
            return self.fixed(r, "CloudWatch Logs", m,
                              f"{gib:g} GiB/month ingested (assumed) x $0.50 + {gib * months:g} GiB stored x $0.03")  # fmt: skip
        if t == "aws:ecr/repository:Repository":
            gib = self.usage.ecr_gib
            return self.fixed(r, "ECR", gib * s(prices.ECR_GB_MONTH), f"{gib:g} GiB of images (assumed) x $0.10")
        if t == "aws:ebs/volume:Volume":
            gib = _num(inputs.get("size"))
            return self.fixed(r, "EBS", gib * s(prices.EBS_GP3_GB_MONTH), f"{gib:g} GiB x $0.08")
        if t == "aws:wafv2/webAcl:WebAcl":
            rules = len(inputs.get("rules") or [])
            m = s(prices.WAF_ACL_MONTH) + rules * s(prices.WAF_RULE_MONTH)
            return self.fixed(r, "WAF", m, f"$5 per ACL + {rules} rules x $1 (requests not estimated)")
        if t == "aws:route53/zone:Zone":
            return self.fixed(r, "Route 53", s(prices.ROUTE53_ZONE_MONTH), "$0.50 per hosted zone")
        if t in ("aws:elasticache/replicationGroup:ReplicationGroup", "aws:elasticache/cluster:Cluster"):
            return self._elasticache(r, inputs)
        if t == INGRESS and r.get("urn") in self.alb_ingresses:
            group, first = self.alb_ingresses[str(r.get("urn"))]
            if not first:
                return self.line(r, "load balancers", "free", 0, 0, 0, f"shares the ALB of group {group}")
            lcu = self.usage.alb_lcu
            m = s(prices.ALB_HOUR) * H + s(prices.ALB_LCU_HOUR) * lcu * H
            return self.fixed(r, "load balancers", m,
                              f"ALB of group {group} (AWS Load Balancer Controller): {H} h x $0.0225 + {lcu:g} LCU "
                              "(assumed) x $0.008/h")  # fmt: skip
        if t in FREE:
            return self.line(r, "free", "free", 0, 0, 0, FREE[t])
        for prefix, why in FREE_PREFIXES.items():
            if t.startswith(prefix):
                return self.line(r, "free", "free", 0, 0, 0, why)
        return self.line(r, "unknown", "unknown", None, None, None, f"no price for {t}")

    def _elasticache(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        node = str(inputs.get("nodeType", ""))
        hour = prices.elasticache_node_hour(node, self.region)
        if hour is None:
            return self.line(r, "ElastiCache", "unknown", None, None, None, f"no price for node type {node!r}")
        if "numCacheClusters" in inputs:
            count = int(_num(inputs.get("numCacheClusters"), 1))
        elif "numNodeGroups" in inputs:
            count = int(_num(inputs["numNodeGroups"], 1)) * (1 + int(_num(inputs.get("replicasPerNodeGroup"))))
        else:
            count = int(_num(inputs.get("numCacheNodes"), 1))
        return self.fixed(r, "ElastiCache", hour * H * count, f"{count} x {node} x {H} h x ${hour:.3f}")

    def _pool_price(self, types: list[str]) -> tuple[catalog.InstanceType | None, float | None]:
        """The type the pool is priced at: the cheapest listed type that can run its workloads."""
        known = []
        for name in types:
            try:
                known.append(catalog.instance(name))
            except CatalogError:
                continue
        if not known:
            return None, None
        node = min(known, key=lambda t: t.price_per_hour_usd)
        return node, prices.instance_hour(node.name, self.region)

    def _ec2_line(self, r: Mapping[str, Any], pool: str, types: list[str], lo: int, desired: int, hi: int,
                  spot_share: float, disk_gib: float) -> Line:  # fmt: skip
        node, hour = self._pool_price(types)
        if node is None or hour is None:
            return self.line(r, "EC2", "unknown", None, None, None, f"no price for {', '.join(types) or 'any type'}")
        need = self.demand.get(pool)
        expected_nodes = float(desired)
        basis_need = ""
        if need is not None and node.accelerator_count:
            shards = max(1, self.shards.get(pool, 1)) if r.get("type") == NODE_GROUP else 1
            need = need / shards
            wanted = math.ceil(need / node.accelerator_count)
            expected_nodes = float(min(hi, max(desired, wanted)))
            basis_need = f"; workloads need {need:g} accelerators = {wanted} nodes"
        if self.usage.night_hours and lo < expected_nodes and node.accelerator_count:
            day = (24 - self.usage.night_hours) / 24
            expected_nodes = expected_nodes * day + lo * (1 - day)
            basis_need += f"; {self.usage.night_hours:g} h/day at {lo}"
        factor = 1 - spot_share + spot_share * self.usage.spot_factor
        per_node_month = hour * H * factor + disk_gib * prices.service(prices.EBS_GP3_GB_MONTH, self.region)
        category = "EC2 accelerators" if node.is_accelerated else "EC2 general purpose"
        spot = f", {spot_share:.0%} spot at {self.usage.spot_factor:g}x" if spot_share else ", on-demand"
        basis = (f"{node.name} ${hour:.3f}/h{spot}, {disk_gib:g} GiB gp3 per node; nodes min {lo} / expected "
                 f"{expected_nodes:g} / max {hi}{basis_need}")  # fmt: skip
        on_demand_node_month = hour * H + disk_gib * prices.service(prices.EBS_GP3_GB_MONTH, self.region)
        line = self.line(r, category, "priced", lo * per_node_month, expected_nodes * per_node_month,
                         hi * per_node_month, basis)  # fmt: skip
        return replace(line, spot_share=spot_share, monthly_max_on_demand=hi * on_demand_node_month)

    def _load_test_workers(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        """The system nodes the load-test workers take for each run (one vCPU per worker), times the runs."""
        node, hour = self._pool_price(self.system_types)
        if node is None or hour is None:
            return self.line(r, "EC2 load test", "unknown", None, None, None, "no priced system node type")
        run = load_generator.worker_run(inputs, node.vcpu)
        runs = self.usage.load_test_runs
        per_run = run.nodes * hour * run.load_hours
        basis = (f"{run.workers} workers x {run.cpu:g} vCPU on {run.nodes} x {node.name} ${hour:.3f}/h: "
                 f"${per_run:,.2f} per {run.load_hours * 60:g}-minute run (at most {run.deadline_hours * 60:.0f} "
                 f"min), {runs:g} runs a month (assumed)")  # fmt: skip
        return self.line(r, "EC2 load test", "priced", per_run * runs, per_run * runs,
                         run.nodes * hour * run.deadline_hours * runs, basis)  # fmt: skip

    def _node_group(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        scaling = inputs.get("scalingConfig") or {}
        lo, hi = int(_num(scaling.get("minSize"))), int(_num(scaling.get("maxSize")))
        desired = int(_num(scaling.get("desiredSize"), lo))
        spot = 1.0 if str(inputs.get("capacityType", "ON_DEMAND")).upper() == "SPOT" else 0.0
        lt = self.by_id.get(_get(inputs, "launchTemplate.id"))
        disk = 0.0
        for bdm in _get(lt or {}, "inputs.blockDeviceMappings", []) or []:
            disk += _num(_get(bdm, "ebs.volumeSize"))
        disk = disk or _num(inputs.get("diskSize"), 20)
        pool = str(_get(inputs, f"labels.{POOL_LABEL}", "")) or str(r.get("name", ""))
        return self._ec2_line(r, pool, [str(t) for t in inputs.get("instanceTypes") or []], lo, desired, hi, spot,
                              disk)  # fmt: skip

    def _karpenter(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        spec = _get(inputs, "spec.template.spec", {}) or {}
        reqs = {
            q.get("key"): q.get("values") or [] for q in spec.get("requirements") or [] if q.get("operator") == "In"
        }
        types = [str(t) for t in reqs.get("node.kubernetes.io/instance-type", [])]
        capacity = set(reqs.get("karpenter.sh/capacity-type", ["on-demand"]))
        spot = 1.0 if capacity == {"spot"} else (self.usage.mixed_spot_share if "spot" in capacity else 0.0)
        node, _ = self._pool_price(types)
        limits = _get(inputs, "spec.limits", {}) or {}
        hi = 0
        if node is not None:
            accel = sum(_num(limits.get(k)) for k in ACCELERATOR_RESOURCES)
            if accel and node.accelerator_count:
                hi = int(accel // node.accelerator_count)
            elif "cpu" in limits:
                hi = int(_num(limits["cpu"]) // node.vcpu)
        node_class = self.node_classes.get(_get(spec, "nodeClassRef.name"))
        disk = sum(
            _num(_get(b, "ebs.volumeSize")) for b in _get(node_class or {}, "inputs.spec.blockDeviceMappings", []) or []
        )
        pool = str(_get(inputs, "metadata.name", r.get("name", "")))
        if not hi:
            return self.line(r, "EC2", "unknown", None, None, None, "Karpenter pool without a node limit: no maximum")
        return self._ec2_line(r, pool, types, 0, 0, hi, spot, disk or 20)


def _alb_groups(resources: list[Mapping[str, Any]]) -> dict[str, tuple[str, bool]]:
    """Ingresses the AWS Load Balancer Controller turns into ALBs: urn -> (group, first of its group).
    One ALB serves a group (``group.name`` of the class parameters or the annotation); an Ingress
    without a group gets its own."""
    params = {_get(r, "inputs.metadata.name"): _get(r, "inputs.spec.group.name") for r in resources
              if r.get("type") == INGRESS_CLASS_PARAMS}  # fmt: skip
    classes = {}
    for r in resources:
        if r.get("type") == INGRESS_CLASS and _get(r, "inputs.spec.controller") == ALB_CONTROLLER:
            classes[_get(r, "inputs.metadata.name")] = params.get(_get(r, "inputs.spec.parameters.name"))
    seen: set[str] = set()
    out: dict[str, tuple[str, bool]] = {}
    for r in resources:
        if r.get("type") != INGRESS:
            continue
        meta = _get(r, "inputs.metadata", {}) or {}
        cls = _get(r, "inputs.spec.ingressClassName")
        if cls not in classes:
            continue
        group = (meta.get("annotations") or {}).get("alb.ingress.kubernetes.io/group.name") or classes[cls]
        group = group or f"{meta.get('namespace', 'default')}/{meta.get('name', r.get('name'))}"
        out[str(r.get("urn"))] = (group, group not in seen)
        seen.add(group)
    return out


def _pool_demand(resources: list[Mapping[str, Any]]) -> dict[str, float]:
    """Accelerators the workloads pinned to each pool (``node-pool`` affinity or selector) request."""
    need: dict[str, float] = defaultdict(float)
    for r in resources:
        if r.get("type") not in WORKLOAD_KINDS:
            continue
        spec = _get(r, "inputs.spec", {}) or {}
        replicas = _num(spec.get("replicas"), 1)
        pod = _get(spec, "template.spec", None) or _get(spec, "leaderWorkerTemplate.workerTemplate.spec", {}) or {}
        pools = []
        selector = _get(pod, "nodeSelector", {}) or {}
        if POOL_LABEL in selector:
            pools = [selector[POOL_LABEL]]
        for term in _get(pod, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                         []) or []:  # fmt: skip
            for expr in term.get("matchExpressions") or []:
                if expr.get("key") == POOL_LABEL and expr.get("operator") == "In":
                    pools = list(expr.get("values") or [])
        accel = 0.0
        for container in pod.get("containers") or []:
            limits = _get(container, "resources.limits", {}) or {}  # resource names contain dots: index directly
            accel += sum(_num(limits.get(k)) for k in ACCELERATOR_RESOURCES)
        if pools and accel:
            need[str(pools[0])] += replicas * accel
    return dict(need)
