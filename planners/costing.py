"""Monthly cost of a stack from its recorded resources: per resource, per area, min/expected/max.

Pure Python, no Pulumi: it reads resources as plain dicts (``type``, ``urn``, ``name``, ``custom``,
``id``, ``inputs``), as ``inferctl plan`` writes them and CrossGuard hands them to stack policies.

- EC2: each managed node group and Karpenter NodePool at its minimum, expected and maximum node count.
  Expected = the nodes the workloads pinned to the pool (``node-pool`` affinity) need hour by hour, as
  their KEDA ScaledObjects bound them by day and by night (the model is ``node_hours``'s docstring);
  a pool no workload pins to stays at its desired size. Spot pools are priced at ``Usage.spot_factor``
  (a pool allowing spot and on-demand at ``Usage.mixed_spot_share``). Root volumes (launch template /
  EC2NodeClass) are EBS per node.
- Services: ``prices`` list prices x hours (730 a month) or GiB; usage-driven parts (NAT and endpoint
  data, ALB LCUs, log volume, bucket size) come from ``Usage``, whose defaults are stated assumptions.
- Types the table does not know, and values that cannot be read (a malformed Kubernetes quantity), are
  *unknown* (reported, never 0). Types AWS does not bill (IAM, routes, security groups, Kubernetes
  objects, which run on the priced nodes) are *free*, each by name (``costing_inputs.FREE``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from inference_platform.catalog import instances as catalog
from inference_platform.catalog import load_generator, prices
from inference_platform.catalog.instances import CatalogError
from inference_platform.planners import node_hours
from inference_platform.planners.cost_assumptions import Usage, UsageError, assumption_key, assumptions_schema
from inference_platform.planners.costing_inputs import (
    ACCELERATOR_RESOURCES,
    FREE,
    FREE_PREFIXES,
    INGRESS,
    KARPENTER_POOL,
    LAUNCH_TEMPLATE,
    NODE_CLASS,
    NODE_GROUP,
    POOL_LABEL,
    WORKLOAD_KINDS,
    QuantityError,
    alb_groups,
    get,
    gib,
    number,
    pool_demand,
)

__all__ = [
    "ACCELERATOR_RESOURCES",
    "FREE",
    "FREE_PREFIXES",
    "KARPENTER_POOL",
    "LAUNCH_TEMPLATE",
    "NODE_CLASS",
    "NODE_GROUP",
    "POOL_LABEL",
    "WORKLOAD_KINDS",
    "Estimate",
    "Line",
    "Usage",
    "UsageError",
    "area_of",
    "assumption_key",
    "assumptions_schema",
    "estimate",
    "plan_region",
]

H: Final = prices.HOURS_PER_MONTH
Status = Literal["priced", "free", "unknown"]
MODEL_STORE: Final = "inference:storage:ModelStore"
BATCH_LANE: Final = "inference:batch:"
"""Components of the asynchronous lane: its work queue and bucket are priced by the lines they carry."""
BATCH_BUCKET_ROLE: Final = "batch"
BUCKET_ROLE_TAG: Final = "bucket-role"
"""The tag inference_platform.components.storage.model_store puts on its buckets (``models`` or ``access-logs``)."""


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
    if isinstance(region := outputs.get("region"), str):
        return region
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


class _Context:
    def __init__(self, resources: list[Mapping[str, Any]], region: str, usage: Usage) -> None:
        self.region = region
        self.usage = usage
        self.by_id = {r.get("id"): r for r in resources if r.get("id")}
        self.node_classes = {get(r, "inputs.metadata.name"): r for r in resources if r.get("type") == NODE_CLASS}
        self.demand = pool_demand(resources)
        self.system_types = load_generator.system_node_types(resources)
        self.alb_ingresses = alb_groups(resources)
        # A zonal pool is one node group per zone, all labelled with the pool: they share its demand.
        self.shards: dict[str, int] = defaultdict(int)
        for r in resources:
            if r.get("type") == NODE_GROUP:
                self.shards[str(get(r, f"inputs.labels.{POOL_LABEL}", ""))] += 1

    def line(self, r: Mapping[str, Any], category: str, status: Status, lo: float | None, mid: float | None,
             hi: float | None, basis: str) -> Line:  # fmt: skip
        return Line(r.get("urn", ""), r.get("type", ""), r.get("name", ""), area_of(r.get("urn", "")), category,
                    status, lo, mid, hi, basis)  # fmt: skip

    def fixed(self, r: Mapping[str, Any], category: str, monthly: float, basis: str) -> Line:
        return self.line(r, category, "priced", monthly, monthly, monthly, basis)

    def price(self, r: Mapping[str, Any]) -> Line | None:
        try:
            return self._price(r)
        except QuantityError as err:
            return self.line(r, "unknown", "unknown", None, None, None, str(err))

    def _price(self, r: Mapping[str, Any]) -> Line | None:
        t = str(r.get("type", ""))
        inputs = r.get("inputs") or {}

        def s(price: float) -> float:
            return prices.service(price, self.region)

        if t == NODE_GROUP:
            return self._node_group(r, inputs)
        if load_generator.is_load_test_workers(r):
            return self._load_test_workers(r, inputs)
        if t == KARPENTER_POOL:
            return self._karpenter(r, inputs)
        if t == "aws:eks/cluster:Cluster":
            return self.fixed(r, "EKS control plane", s(prices.EKS_CLUSTER_HOUR) * H, f"{H} h x $0.10")
        if t == "aws:ec2/natGateway:NatGateway":
            data = self.usage.nat_gib_per_gateway
            m = s(prices.NAT_GATEWAY_HOUR) * H + s(prices.NAT_GATEWAY_GB) * data
            return self.fixed(r, "NAT gateways", m, f"{H} h x $0.045 + {data:g} GiB processed (assumed) x $0.045")
        if t == "aws:ec2/eip:Eip":
            return self.fixed(r, "public IPv4", s(prices.PUBLIC_IPV4_HOUR) * H, f"{H} h x $0.005 per public IPv4")
        if t == "aws:ec2/vpcEndpoint:VpcEndpoint":
            if inputs.get("vpcEndpointType", "Gateway") == "Gateway":
                return self.line(r, "VPC endpoints", "free", 0, 0, 0, "gateway endpoints are free")
            zones = max(1, len(inputs.get("subnetIds") or []))
            data = self.usage.endpoint_gib_per_endpoint
            m = s(prices.INTERFACE_ENDPOINT_AZ_HOUR) * H * zones + s(prices.INTERFACE_ENDPOINT_GB) * data
            return self.fixed(r, "VPC endpoints", m, f"{zones} AZ x {H} h x $0.01 + {data:g} GiB (assumed) x $0.01")
        if t == "aws:lb/loadBalancer:LoadBalancer":
            if inputs.get("loadBalancerType", "application") != "application":
                return self.line(r, "load balancers", "unknown", None, None, None, "only ALBs are priced")
            lcu = self.usage.alb_lcu
            m = s(prices.ALB_HOUR) * H + s(prices.ALB_LCU_HOUR) * lcu * H
            return self.fixed(r, "load balancers", m, f"{H} h x $0.0225 + {lcu:g} LCU (assumed) x $0.008/h")
        if t == "aws:fsx/lustreFileSystem:LustreFileSystem":
            size = gib(inputs.get("storageCapacity"), "storageCapacity")
            tier = int(number(inputs.get("perUnitStorageThroughput"), "perUnitStorageThroughput")) or None
            rate = prices.fsx_gb_month(str(inputs.get("deploymentType", "")), tier, self.region)
            if rate is None:
                return self.line(r, "FSx for Lustre", "unknown", None, None, None,
                                 f"no price for {inputs.get('deploymentType')} at {tier} MB/s/TiB")  # fmt: skip
            return self.fixed(r, "FSx for Lustre", size * rate, f"{size:,.0f} GiB x ${rate:.3f} ({tier} MB/s/TiB)")
        if t in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
            return self._bucket(r, inputs)
        if t == "aws:sqs/queue:Queue" and component_of(str(r.get("urn", ""))).startswith(BATCH_LANE):
            return self._batch_queue(r, inputs)
        if t == "aws:kms/key:Key":
            return self.fixed(r, "KMS", s(prices.KMS_KEY_MONTH), "$1 per key-month (requests not estimated)")
        if t == "aws:secretsmanager/secret:Secret":
            return self.fixed(r, "Secrets Manager", s(prices.SECRET_MONTH), "$0.40 per secret-month")
        if t == "aws:cloudwatch/logGroup:LogGroup":
            ingested = self.usage.log_gib_per_group
            months = min(12.0, number(inputs.get("retentionInDays"), "retentionInDays", 365) / 30)
            m = ingested * s(prices.LOGS_INGEST_GB) + ingested * months * s(prices.LOGS_STORE_GB_MONTH)
            return self.fixed(r, "CloudWatch Logs", m, f"{ingested:g} GiB/month ingested (assumed) x $0.50 + "
                              f"{ingested * months:g} GiB stored x $0.03")  # fmt: skip
        if t == "aws:ecr/repository:Repository":
            images = self.usage.ecr_gib
            return self.fixed(r, "ECR", images * s(prices.ECR_GB_MONTH), f"{images:g} GiB of images (assumed) x $0.10")
        if t == "aws:ebs/fastSnapshotRestore:FastSnapshotRestore":
            zone = inputs.get("availabilityZone")
            return self.fixed(r, "EBS", prices.fsr_month(self.region),
                              f"fast snapshot restore in {zone}: {H} h x ${prices.EBS_FSR_AZ_HOUR:g} (the snapshot's "
                              f"storage, ${prices.EBS_SNAPSHOT_GB_MONTH:g} per GB-month of its blocks, is billed outside "
                              "the stack)")  # fmt: skip
        if t == "aws:ebs/volume:Volume":
            size = gib(inputs.get("size"), "size")
            return self.fixed(r, "EBS", size * s(prices.EBS_GP3_GB_MONTH), f"{size:g} GiB x $0.08")
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
            count = int(number(inputs.get("numCacheClusters"), "numCacheClusters", 1))
        elif "numNodeGroups" in inputs:
            groups = number(inputs["numNodeGroups"], "numNodeGroups", 1)
            count = int(groups) * (1 + int(number(inputs.get("replicasPerNodeGroup"), "replicasPerNodeGroup")))
        else:
            count = int(number(inputs.get("numCacheNodes"), "numCacheNodes", 1))
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
                  spot_share: float, disk_gib: float, disk_performance_month: float = 0.0) -> Line:  # fmt: skip
        node, hour = self._pool_price(types)
        if node is None or hour is None:
            return self.line(r, "EC2", "unknown", None, None, None, f"no price for {', '.join(types) or 'any type'}")
        if pool in self.demand.unreadable:
            return self.line(r, "EC2", "unknown", None, None, None, f"workload demand: {self.demand.unreadable[pool]}")
        expected_nodes, basis_need = float(min(hi, max(lo, desired))), ""
        loads = self.demand.loads.get(pool)
        if loads and node.accelerator_count:
            shards = max(1, self.shards.get(pool, 1)) if r.get("type") == NODE_GROUP else 1
            parts = node_hours.segments(loads, per_node=node.accelerator_count, shards=shards, lo=lo, hi=hi)
            expected_nodes = node_hours.expected_nodes(parts)
            basis_need = "; " + _demand_basis(loads, parts, shards)
        factor = 1 - spot_share + spot_share * self.usage.spot_factor
        disk_month = disk_gib * prices.service(prices.EBS_GP3_GB_MONTH, self.region) + disk_performance_month
        per_node_month = hour * H * factor + disk_month
        category = "EC2 accelerators" if node.is_accelerated else "EC2 general purpose"
        spot = f", {spot_share:.0%} spot at {self.usage.spot_factor:g}x" if spot_share else ", on-demand"
        perf = f" + ${disk_performance_month:,.2f}/month provisioned IOPS/throughput" if disk_performance_month else ""
        basis = (f"{node.name} ${hour:.3f}/h{spot}, {disk_gib:g} GiB gp3{perf} per node; nodes min {lo} / expected "
                 f"{expected_nodes:.4g} / max {hi}{basis_need}")  # fmt: skip
        on_demand_node_month = hour * H + disk_month
        line = self.line(r, category, "priced", lo * per_node_month, expected_nodes * per_node_month,
                         hi * per_node_month, basis)  # fmt: skip
        return replace(line, spot_share=spot_share, monthly_max_on_demand=hi * on_demand_node_month)

    def _bucket(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        """A model store's model bucket holds the models (``s3ModelGib``); every other bucket, its access-log
        bucket included, is priced at the generic ``s3OtherGib``. Decided by the component the bucket
        belongs to and the role tag that component sets, never by the bucket's name."""
        role = str((inputs.get("tags") or {}).get(BUCKET_ROLE_TAG, "models"))
        owner = component_of(str(r.get("urn", "")))
        if owner == MODEL_STORE and role == "models":
            size, what = self.usage.s3_model_gib, "model store"
        elif owner.startswith(BATCH_LANE) and role == BATCH_BUCKET_ROLE:
            return self._batch_bucket(r)
        else:
            size, what = self.usage.s3_other_gib, "generic bucket"
        monthly = size * prices.service(prices.S3_STANDARD_GB_MONTH, self.region)
        return self.fixed(r, "S3", monthly, f"{what}: {size:g} GiB (assumed) x $0.023")

    def _batch_bucket(self, r: Mapping[str, Any]) -> Line:
        """The lane's files (``batchGib``) and its requests: result writes and reads per line."""
        u = self.usage
        storage = u.batch_gib * prices.service(prices.S3_STANDARD_GB_MONTH, self.region)
        puts = (
            u.batch_lines_per_month
            * u.batch_s3_puts_per_line
            / 1000
            * prices.service(prices.S3_PUT_PER_1000, self.region)
        )
        gets = (
            u.batch_lines_per_month
            * u.batch_s3_gets_per_line
            / 1000
            * prices.service(prices.S3_GET_PER_1000, self.region)
        )
        basis = (f"batch lane: {u.batch_gib:g} GiB (assumed) x $0.023 + {u.batch_lines_per_month:,.0f} lines/month "
                 f"(assumed) x ({u.batch_s3_puts_per_line:g} PUT x $0.005/1000 + {u.batch_s3_gets_per_line:g} GET x "
                 "$0.0004/1000)")  # fmt: skip
        return self.fixed(r, "S3", storage + puts + gets, basis)

    def _batch_queue(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        """The lane's work queue carries every line's requests; its dead-letter queue (the target of its redrive,
        the one with no redrive of its own) only the few that failed every delivery."""
        u = self.usage
        if not inputs.get("redrivePolicy"):
            return self.line(r, "SQS", "free", 0, 0, 0, "dead-letter queue: only lines that failed every delivery "
                             "(within the account's free 1M requests a month)")  # fmt: skip
        fifo = bool(inputs.get("fifoQueue"))
        rate = prices.SQS_FIFO_PER_MILLION if fifo else prices.SQS_STANDARD_PER_MILLION
        requests = u.batch_lines_per_month * u.batch_sqs_requests_per_line
        monthly = requests / 1e6 * prices.service(rate, self.region)
        basis = (f"batch work queue ({'FIFO' if fifo else 'standard'}): {u.batch_lines_per_month:,.0f} lines/month "
                 f"(assumed) x {u.batch_sqs_requests_per_line:g} requests x ${rate:.2f}/million (the account's free "
                 "1M a month not subtracted)")  # fmt: skip
        return self.fixed(r, "SQS", monthly, basis)

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
        lo = int(number(scaling.get("minSize"), "scalingConfig.minSize"))
        hi = int(number(scaling.get("maxSize"), "scalingConfig.maxSize"))
        desired = int(number(scaling.get("desiredSize"), "scalingConfig.desiredSize", lo))
        spot = 1.0 if str(inputs.get("capacityType", "ON_DEMAND")).upper() == "SPOT" else 0.0
        lt = self.by_id.get(get(inputs, "launchTemplate.id"))
        disk, perf = 0.0, 0.0
        for bdm in get(lt or {}, "inputs.blockDeviceMappings", []) or []:
            disk += gib(get(bdm, "ebs.volumeSize"), "launch template ebs.volumeSize")
            perf += prices.gp3_performance_month(get(bdm, "ebs.iops"), get(bdm, "ebs.throughput"), self.region)
        disk = disk or gib(inputs.get("diskSize"), "diskSize", 20)
        pool = str(get(inputs, f"labels.{POOL_LABEL}", "")) or str(r.get("name", ""))
        return self._ec2_line(r, pool, [str(t) for t in inputs.get("instanceTypes") or []], lo, desired, hi, spot,
                              disk, perf)  # fmt: skip

    def _karpenter(self, r: Mapping[str, Any], inputs: Mapping[str, Any]) -> Line:
        spec = get(inputs, "spec.template.spec", {}) or {}
        reqs = {
            q.get("key"): q.get("values") or [] for q in spec.get("requirements") or [] if q.get("operator") == "In"
        }
        types = [str(t) for t in reqs.get("node.kubernetes.io/instance-type", [])]
        capacity = set(reqs.get("karpenter.sh/capacity-type", ["on-demand"]))
        spot = 1.0 if capacity == {"spot"} else (self.usage.mixed_spot_share if "spot" in capacity else 0.0)
        node, _ = self._pool_price(types)
        limits = get(inputs, "spec.limits", {}) or {}
        hi = 0
        if node is not None:
            accel = sum(number(limits.get(k), f"spec.limits.{k}") for k in ACCELERATOR_RESOURCES)
            if accel and node.accelerator_count:
                hi = int(accel // node.accelerator_count)
            elif "cpu" in limits:
                hi = int(number(limits["cpu"], "spec.limits.cpu") // node.vcpu)
        node_class = self.node_classes.get(get(spec, "nodeClassRef.name"))
        mappings = get(node_class or {}, "inputs.spec.blockDeviceMappings", []) or []
        disk = sum(gib(get(b, "ebs.volumeSize"), "EC2NodeClass ebs.volumeSize") for b in mappings)
        perf = sum(prices.gp3_performance_month(get(b, "ebs.iops"), get(b, "ebs.throughput"), self.region)
                   for b in mappings)  # fmt: skip
        pool = str(get(inputs, "metadata.name", r.get("name", "")))
        if not hi:
            return self.line(r, "EC2", "unknown", None, None, None, "Karpenter pool without a node limit: no maximum")
        return self._ec2_line(r, pool, types, 0, 0, hi, spot, disk or 20, perf)


def component_of(urn: str) -> str:
    """The type of the component a resource belongs to (its innermost ``inference:`` parent), else ``""``."""
    try:
        chain = urn.split("::")[2].split("$")[:-1]
    except IndexError:
        return ""
    return next((t for t in reversed(chain) if t.startswith("inference:")), "")


def _demand_basis(loads: list[node_hours.Load], parts: list[node_hours.Segment], shards: int) -> str:
    """What the workloads need and when, for the line's basis."""
    who = ", ".join(
        f"{load.workload} {load.planned_replicas} x {load.accelerators_per_replica:g} accelerators"
        + (f" ({load.schedule.describe()})" if load.schedule else " (no schedule: all day)")
        for load in loads
    )
    share = f" over {shards} zonal groups" if shards > 1 else ""
    hours = " + ".join(f"{p.hours:g} h x {p.nodes}" for p in sorted(parts, key=lambda p: -p.hours))
    return f"workloads {who}{share}: node-hours a day {hours}"
