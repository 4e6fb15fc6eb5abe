"""``inference-platform:coldStart``: what shortens a scale-up, and the stack's cold start built from its settings.

The section holds the options that cut the time from a scale-up decision to a serving replica, each counted by
the model (``inference_platform.planners.cold_start``) only where it takes effect and refused where it would not:

- ``imagePull: parallel``: nodeadm's ``FastImagePull`` feature gate in the serving pool's NodeConfig (AL2023, at
  least 4 vCPUs and 7 GiB): SOCI parallel pull/unpack. It is no lazy loading: nodeadm writes
  ``parallel_pull_unpack.enable = true`` (awslabs/amazon-eks-ami v20260724
  nodeadm/internal/containerd/snapshotter/soci-snapshotter.config.toml), and soci-snapshotter then skips lazy-load
  entirely (v0.15.0 docs/config.md), so a SOCI index in the image would never be read (the pipeline builds none).
- ``imagePull: cached`` with ``imageCache``: the serving image pre-pulled on an EBS snapshot (``inferctl image-cache
  build``) that each new serving node mounts as containerd's root (``catalog/image_cache.py``): no pull, when the
  volume is fully initialized at creation (fast snapshot restore, one ``aws.ebs.FastSnapshotRestore`` per zone of
  the serving pool) or at a provisioned initialization rate. AL2023 managed node groups.
- ``downloadConcurrency``: ranged GETs ``inferctl artifacts download`` keeps in flight when weights come from S3
  (``inference.model.source`` download); S3 serves about 85 MB/s per connection.
- ``standbyReplicas``: placeholder pods that hold a replica's accelerators (and pull the image) at a negative
  priority, so the first replicas of a scale-up start on a running node
  (``inference_platform.components.autoscaling.standby``). They cost what their nodes cost (``inferctl cost``).
- ``figures``: what the stack measured on its own deploy, replacing the model's figure for that phase.

Also here, for the checks of other sections: ``inputs_for`` (the stack's ``StartInputs``), ``replica_hold`` (what one
replica holds within the SLO) and ``ramp_problems`` (``autoscaling``'s targets and ceiling against the headroom a
scale-up at ``autoscaling.rampPercentPerHour`` needs). ``inferctl plan``'s summary and ``inferctl capacity
cold-start --stack`` print the loaded stack's model (``inference_platform.settings.derived.cold_start_model``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from inference_platform import catalog
from inference_platform.catalog import image_cache, image_sizes, models
from inference_platform.catalog import transfer_rates as rates
from inference_platform.planners import cold_start, latency, placement, scaling
from inference_platform.planners.planning_factors import DEFAULT_FACTORS
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.inference import InferenceSettings

if TYPE_CHECKING:
    from inference_platform.settings.capacity import CapacityBounds
    from inference_platform.settings.serving import ServingSettings

GIB = 2**30
MAX_DOWNLOAD_CONCURRENCY = 64
"""Ranged GETs one pod keeps in flight: 64 x 85 MB/s is 5.4 GB/s, beyond any pod's share of a 100 Gbps card."""
MAX_STANDBY_REPLICAS = 100


class FiguresSettings(Section):
    node_launch_seconds: float | None = Field(default=None, gt=0, le=7200)
    """Default unset (modelled). Seconds from a pending pod to a Ready node, measured on this stack."""
    image_pull_seconds: float | None = Field(default=None, gt=0, le=7200)
    """Default unset (modelled). Seconds the serving image takes to pull on a new node, measured."""
    weights_mib_per_second: float | None = Field(default=None, gt=0, le=1_000_000, alias="weightsMiBps")
    """Default unset (modelled). MiB/s one pod stages its weights at, measured (an init container's log)."""
    warmup_seconds: float | None = Field(default=None, gt=0, le=7200)
    """Default unset (assumed 90). Seconds from weights on disk to a ready server, measured."""

    def figures(self) -> cold_start.Figures:
        return cold_start.Figures(node_launch_s=self.node_launch_seconds, image_pull_s=self.image_pull_seconds,
                                  weights_mib_s=self.weights_mib_per_second, warmup_s=self.warmup_seconds)  # fmt: skip


MIN_CACHE_GIB = 20
MAX_CACHE_GIB = 16384
"""Fast snapshot restore takes snapshots of up to 16 TiB (image_cache.FSR_SOURCE)."""


class ImageCacheSettings(Section):
    snapshot_id: str
    """Required. The snapshot ``inferctl image-cache build`` made of the serving image (``snap-`` and 8 or 17 hex
    digits), encrypted with the stack's volume key (checked at deploy)."""
    size_gib: int = Field(ge=MIN_CACHE_GIB, le=MAX_CACHE_GIB)
    """Required, in [20, 16384]. The snapshot's size (GiB) and each node's cache volume: it sets the fast snapshot
    restore credits (one zone creates min(10, 1024 / size) fast-restored volumes at once)."""
    fast_snapshot_restore: bool = True
    """Default true: one fast snapshot restore per zone of the serving pool ($0.75 per zone-hour in us-east-1,
    ``inferctl cost``); each new node's volume is then fully initialized at creation."""
    initialization_rate_mi_bps: int | None = Field(default=None, ge=image_cache.INIT_RATE_MIN_MIB_S,
                                                   le=image_cache.INIT_RATE_MAX_MIB_S,
                                                   alias="initializationRateMiBps")  # fmt: skip
    """Default unset. A provisioned volume initialization rate (100-300 MiB/s) instead of fast snapshot restore:
    the snapshot's blocks arrive at that rate (the model counts all of them: the image and its layers)."""

    def problems_at(self, key: str) -> list[Problem]:
        out = []
        if not image_cache.SNAPSHOT_ID.match(self.snapshot_id):
            out.append(Problem(f"{key}.snapshotId", f"got {self.snapshot_id!r}; expected an EBS snapshot id, snap- and "
                               "8 or 17 lower-case hex digits (inferctl image-cache build prints it)"))  # fmt: skip
        rate = self.initialization_rate_mi_bps
        if self.fast_snapshot_restore and rate is not None:
            out.append(Problem(f"{key}.initializationRateMiBps", f"got {rate}; a rate beside fast snapshot restore "
                               f"overrides it ({image_cache.INIT_RATE_SOURCE}): set one, or "
                               f"{key}.fastSnapshotRestore false"))  # fmt: skip
        if not self.fast_snapshot_restore and rate is None:
            out.append(Problem(f"{key}.fastSnapshotRestore", "got false without initializationRateMiBps; the volume "
                               "would then read each block from S3 on first access, at no published rate, and the "
                               "start it should shorten is not modelled: keep fast snapshot restore or set "
                               f"{key}.initializationRateMiBps (100-300)"))  # fmt: skip
        need = image_sizes.pull_need_gib(image_sizes.SERVING_GPU_IMAGE_GIB)
        if not image_sizes.fits(image_sizes.SERVING_GPU_IMAGE_GIB, self.size_gib):
            room = image_sizes.room_for_images_gib(self.size_gib)
            out.append(Problem(f"{key}.sizeGib", f"got {self.size_gib}; the serving image's layers and snapshot "
                               f"({need:g} GiB) do not fit the {room:.0f} GiB the kubelet leaves for images on it "
                               f"(catalog/image_sizes.py): at least "
                               f"{image_sizes.min_disk_gib(image_sizes.SERVING_GPU_IMAGE_GIB)}"))  # fmt: skip
        return out


class ColdStartSettings(Section):
    key: ClassVar[str] = "coldStart"

    image_pull: Literal["full", "parallel", "cached"] = "full"
    """Default ``full``. ``parallel``: nodeadm's FastImagePull on the serving pool's nodes (AL2023, >= 4 vCPUs and
    7 GiB): SOCI parallel pull/unpack, at best half the pull (planners/cold_start.py). ``cached``: the image from
    the snapshot ``imageCache`` names, mounted as containerd's root (AL2023 managed node groups)."""
    image_cache: ImageCacheSettings | None = None
    """Required with imagePull cached, refused otherwise (``ImageCacheSettings``)."""
    download_concurrency: int = Field(default=cold_start.DEFAULT_DOWNLOAD_CONCURRENCY, ge=1,
                                      le=MAX_DOWNLOAD_CONCURRENCY)  # fmt: skip
    """Default 10, in [1, 64]. Ranged GETs the weights download keeps in flight (inference.model.source
    download only: FSx stages by copy)."""
    standby_replicas: int = Field(default=0, ge=0, le=MAX_STANDBY_REPLICAS)
    """Default 0. Placeholder pods holding a replica's accelerators each, preempted by a scale-up: that many replicas
    start on a running node. Billed as the nodes they hold (inferctl cost)."""
    figures: FiguresSettings = Field(default_factory=FiguresSettings)

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out: list[Problem] = []
        serving, inference = ctx.sections.get("serving"), ctx.sections.get("inference")
        pools = getattr(ctx.sections.get("nodePools"), "root", None) or {}
        pool = pools.get(getattr(serving, "node_pool", None)) if serving is not None else None
        pool_name = getattr(serving, "node_pool", "")
        if self.image_pull == "parallel" and pool is not None:
            if pool.ami_family != "al2023":
                out.append(Problem("coldStart.imagePull", f"got parallel; it is nodeadm's FastImagePull, which only "
                                   f"AL2023 nodes run (the serving pool's nodePools.{pool_name}.amiFamily is "
                                   f"{pool.ami_family}): use full or amiFamily al2023"))  # fmt: skip
            else:
                small = [t for t in pool.instance_types if not cold_start.fast_image_pull_applies(t)]
                if small:
                    out.append(Problem("coldStart.imagePull", f"got parallel; nodeadm ignores FastImagePull on "
                                       f"{', '.join(small)} in nodePools.{pool_name}.instanceTypes (fewer than "
                                       f"{cold_start.FAST_IMAGE_PULL_MIN_VCPUS} vCPUs or "
                                       f"{cold_start.FAST_IMAGE_PULL_MIN_MEMORY_GIB} GiB): use full, or larger "
                                       "instance types"))  # fmt: skip
        out += self._cache_problems(ctx, pool, pool_name)
        fsx_enabled = bool(getattr(ctx.sections.get("fsx"), "enabled", False))
        configured = inference.model.source if isinstance(inference, InferenceSettings) else None
        source = inference.model_source(fsx_enabled) if isinstance(inference, InferenceSettings) else None
        if self.download_concurrency != cold_start.DEFAULT_DOWNLOAD_CONCURRENCY and source == "fsx":
            out.append(Problem("coldStart.downloadConcurrency", f"got {self.download_concurrency}; the weights come from "
                               f"FSx (inference.model.source {configured} with fsx.enabled "
                               f"{str(fsx_enabled).lower()}), staged by copy: it has no effect there; leave it unset "
                               "or set inference.model.source download"))  # fmt: skip
        if self.figures.weights_mib_per_second is not None and pool is not None and pool.instance_types:
            out += self._weights_problems(pool_name, pool.instance_types, source, ctx)
        if self.standby_replicas:
            out += self._standby_problems(ctx)
        return out

    def _cache_problems(self, ctx: CheckContext, pool: Any, pool_name: str) -> list[Problem]:
        cache = self.image_cache
        if self.image_pull != "cached":
            if cache is None:
                return []
            return [Problem("coldStart.imageCache", f"set with imagePull {self.image_pull}; the cache is read only "
                            "with coldStart.imagePull cached: set it, or remove imageCache")]  # fmt: skip
        if cache is None:
            return [Problem("coldStart.imagePull", "got cached without coldStart.imageCache; name the snapshot "
                            "`inferctl image-cache build` made: imageCache.snapshotId and sizeGib")]  # fmt: skip
        out = cache.problems_at("coldStart.imageCache")
        provisioning = getattr(ctx.sections.get("cluster"), "provisioning", "managed")
        if provisioning != "managed":
            out.append(Problem("coldStart.imagePull", f"got cached with cluster.provisioning {provisioning}; the "
                               "cache volume and its mount script are written into the managed node groups' launch "
                               "templates: use managed, or imagePull parallel/full"))  # fmt: skip
        if pool is not None and pool.ami_family != "al2023":
            out.append(Problem("coldStart.imagePull", f"got cached; the cache is mounted as containerd's root by "
                               f"AL2023's cloud-init before nodeadm starts containerd, and the serving pool's "
                               f"nodePools.{pool_name}.amiFamily is {pool.ami_family}: use amiFamily al2023"))  # fmt: skip
        if cache.fast_snapshot_restore:
            credits = image_cache.fsr_credits(cache.size_gib)
            nodes = self._new_nodes_per_scale_up(ctx)
            if nodes is not None and nodes > credits:
                out.append(Problem("coldStart.imageCache.sizeGib", f"got {cache.size_gib}; one zone creates "
                                   f"{credits} fast-restored volume(s) at once from a snapshot this size, and one "
                                   f"scale-up period may start {nodes} new nodes in one zone "
                                   f"({image_cache.FSR_SOURCE}): a smaller snapshot, or fewer replicas per "
                                   "autoscaling.scaleUp.pods"))  # fmt: skip
        return out

    @staticmethod
    def _new_nodes_per_scale_up(ctx: CheckContext) -> int | None:
        """New serving nodes one scale-up period can ask for (replicas added / replicas per node, rounded up)."""
        serving, auto = ctx.sections.get("serving"), ctx.sections.get("autoscaling")
        pools = getattr(ctx.sections.get("nodePools"), "root", None) or {}
        pool = pools.get(getattr(serving, "node_pool", None))
        if serving is None or pool is None or not pool.instance_types or not getattr(auto, "enabled", False):
            return None
        try:
            fit = placement.pool_fit(pool.instance_types, getattr(serving, "ranks_per_node", 1))
        except (catalog.CatalogError, ValueError, LookupError):
            return None
        nodes_per_replica = max(1, int(getattr(serving, "nodes", 1)))
        added = int(getattr(getattr(auto, "scale_up", None), "pods", 1))
        return math.ceil(added * nodes_per_replica / max(1, fit.pods_per_node))

    def _weights_problems(
        self, pool_name: str, instance_types: list[str], source: str | None, ctx: CheckContext
    ) -> list[Problem]:
        """A measured staging rate above what the path can carry contradicts the rest of the stack."""
        rate = self.figures.weights_mib_per_second or 0.0
        if source == "fsx":
            fsx = ctx.sections.get("fsx")
            tier = rates.LUSTRE_PERSISTENT_2.get(getattr(fsx, "per_unit_storage_throughput", 0))
            if tier is None:
                return []
            tib = getattr(fsx, "storage_capacity_gib", 0) / 1024
            burst = (tier.network_burst_mb_s or tier.network_baseline_mb_s) * tib * 1e6 / cold_start.MIB
            if rate > burst:
                return [Problem("coldStart.figures.weightsMiBps", f"got {rate:g}; above the FSx file system's network "
                                f"throughput ({burst:,.0f} MiB/s at fsx.storageCapacityGiB "
                                f"{getattr(fsx, 'storage_capacity_gib', 0)} x fsx.perUnitStorageThroughput "
                                f"{getattr(fsx, 'per_unit_storage_throughput', 0)}): measure again or check fsx.*")]  # fmt: skip
            return []
        cards = [d.network_gbps * 1e9 / 8 / cold_start.MIB for t in instance_types if (d := cold_start.disks(t))]
        if cards and rate > min(cards):
            return [Problem("coldStart.figures.weightsMiBps", f"got {rate:g}; above the network card of the serving "
                            f"pool's nodePools.{pool_name}.instanceTypes ({min(cards):,.0f} MiB/s): no download is "
                            "faster than the card it arrives on: measure again")]  # fmt: skip
        return []

    def _standby_problems(self, ctx: CheckContext) -> list[Problem]:
        from inference_platform.settings.replica_bounds import serving_slots

        serving, auto = ctx.sections.get("serving"), ctx.sections.get("autoscaling")
        out = []
        if serving is not None and getattr(serving, "nodes", 1) > 1:
            out.append(Problem("coldStart.standbyReplicas", f"got {self.standby_replicas}; standby holds single-node "
                               f"replicas (serving.nodes is {serving.nodes}: a group spans nodes)"))  # type: ignore[attr-defined]  # fmt: skip
        if auto is not None and not getattr(auto, "enabled", False):
            out.append(Problem("coldStart.standbyReplicas", f"got {self.standby_replicas}; standby serves scale-ups, and "
                               "autoscaling.enabled is false"))  # fmt: skip
            return out  # without autoscaling its maxReplicas is no ceiling: no replica slots to count
        slots = serving_slots(ctx)
        high = getattr(auto, "max_replicas", None)
        if slots is not None and high is not None and high + self.standby_replicas > slots:
            out.append(Problem("coldStart.standbyReplicas", f"got {self.standby_replicas}; with autoscaling.maxReplicas "
                               f"{high} it needs {high + self.standby_replicas} replica slots and the serving pool "
                               f"holds {slots} at its maxSize: raise nodePools.{getattr(serving, 'node_pool', '')}.maxSize"))  # fmt: skip
        return out


def inputs_for(sections: Mapping[str, Any], ceiling: int | None = None) -> cold_start.StartInputs | None:
    """The stack's scale-up as ``StartInputs``; None when nothing rolls out or a section is missing.
    ``ceiling``: the day ceiling the rollout scales to when autoscaling.maxReplicas is unset (the pool's slots
    or the capacity plan's), which caps the replicas one scale-up starts as an explicit maxReplicas does."""
    serving, inference = sections.get("serving"), sections.get("inference")
    pools = getattr(sections.get("nodePools"), "root", None) or {}
    cluster, fsx, auto = sections.get("cluster"), sections.get("fsx"), sections.get("autoscaling")
    if serving is None or inference is None or not getattr(inference, "has_image", False):
        return None
    pool = pools.get(serving.node_pool)
    if pool is None or not pool.instance_types:
        return None
    try:
        node = catalog.instance(pool.instance_types[0])
        fit = placement.pool_fit(pool.instance_types, serving.ranks_per_node)
        weights = models.weight_bytes(serving.resolved_architecture(), serving.precision)
    except (catalog.CatalogError, ValueError, LookupError, models.SizingError):
        return None
    fsx_on = fsx if fsx is not None and getattr(fsx, "enabled", False) else None
    source = inference.model_source(fsx_on is not None)
    if source == "fsx" and fsx_on is None:
        return None  # no cache to stage from: the inference section names inference.model.source
    fsx_mb_s = fsx_on.storage_capacity_gib / 1024 * fsx_on.per_unit_storage_throughput if fsx_on is not None else None
    starts = 1
    if auto is not None and getattr(auto, "enabled", False):
        # One scale-up period adds at most scaleUp.pods replicas, never beyond an explicit ceiling. (The pods
        # of one multi-node replica each stage their own ranks: counted as one start.)
        high = auto.max_replicas if auto.max_replicas is not None else ceiling
        added = auto.scale_up.pods if high is None else min(auto.scale_up.pods, high)
        starts = max(1, added)
    options = sections.get("coldStart") or ColdStartSettings()
    tier = rates.LUSTRE_PERSISTENT_2.get(fsx_on.per_unit_storage_throughput) if fsx_on is not None else None
    monitoring = getattr(inference, "monitoring", None)
    return cold_start.StartInputs(
        provisioner=getattr(cluster, "provisioning", "managed"),
        instance_type=node.name,
        accelerators_per_node=node.accelerator_count,
        image_pull=options.image_pull,
        cache_init_mib_s=_cache_rate(options),
        model_gib=weights / GIB,
        source="fsx" if source == "fsx" else "download",
        fsx_mb_s=fsx_mb_s,
        fsx_cache_gib=tier.cache_gib * fsx_on.storage_capacity_gib / 1024 if tier is not None and fsx_on else None,
        starts_at_once=starts,
        pods_per_node=max(1, fit.pods_per_node),
        local_nvme=pool.local_nvme_raid0(),
        ebs_mib_s=float(pool.disk_throughput()),
        copy_streams=cold_start.PARALLEL_COPY_STREAMS,
        download_concurrency=options.download_concurrency,
        # A thread hashes at one core's rate: no more threads than the init container has whole CPUs.
        hash_threads=max(1, min(cold_start.VERIFY_THREADS, math.floor(inference.init_cpu()))),
        scrape_s=_seconds(getattr(monitoring, "scrape_interval", None), cold_start.DEFAULT_SCRAPE_S),
        standby_replicas=options.standby_replicas,
        figures=options.figures.figures(),
    )


def _cache_rate(options: ColdStartSettings) -> float | None:
    """The cache volume's initialization rate (MiB/s) when it is provisioned instead of fast snapshot restore."""
    cache = options.image_cache
    rate = cache.initialization_rate_mi_bps if cache is not None else None
    return float(rate) if rate is not None else None


def _seconds(duration: str | None, default: float) -> float:
    """A Prometheus duration such as ``15s`` or ``1m`` in seconds (the default when unset or unreadable)."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    if not duration:
        return default
    for suffix in ("ms", "s", "m", "h"):
        if duration.endswith(suffix):
            try:
                return float(duration[: -len(suffix)]) * units[suffix]
            except ValueError:
                return default
    return default


@dataclass(frozen=True)
class Hold:
    """In-flight requests one replica holds within the SLO: the least of serving.maxBatchSize, the sequences
    its KV cache holds at the planned shape, and the largest batch the latency model keeps within the TTFT
    (median and 95th percentile) and ITL SLO (inference_platform.planners.latency, planners.scaling.ttft_p95_ms)."""

    requests: int
    limit: str
    """What sets it (a key or "the KV cache")."""
    slo_key: str
    kv_fit: int | None
    """Sequences the KV cache holds at the mean context (None: not modelled for this layout)."""
    steps: tuple[scaling.Step, ...] = ()
    """How each bound was reached, for the derivation the plan prints."""
    infeasible: str | None = None
    """When no batch meets the SLO: what one request alone sees, against the SLO key that binds (``slo_key``)."""


def replica_hold(sections: Mapping[str, Any], region: str | None = None) -> Hold | None:
    """What one replica holds (``Hold``); None when nothing rolls out. Layouts the latency model cannot
    size fall back to maxBatchSize alone."""
    from inference_platform.settings import capacity as capacity_settings

    serving, cap = sections.get("serving"), sections.get("capacity")
    pools = getattr(sections.get("nodePools"), "root", None) or {}
    if serving is None:
        return None
    pool = pools.get(serving.node_pool)
    if pool is None or not pool.instance_types:
        return None
    batch = serving.max_batch_size
    explicit_slo = getattr(cap, "slo", None)
    slo_key = "capacity.slo" if explicit_slo is not None else "serving.slo.ttftP50Ms"
    ttft = explicit_slo.ttft_ms if explicit_slo is not None else serving.slo.ttft_p50_ms
    itl = explicit_slo.itl_ms if explicit_slo is not None else serving.slo.itl_p50_ms
    p95 = serving.slo.ttft_p95_ms
    isl = getattr(cap, "isl", capacity_settings.DEFAULT_ISL)
    osl = getattr(cap, "osl", capacity_settings.DEFAULT_OSL)
    batch_step = scaling.Step("batch limit", f"{batch} requests", "serving.maxBatchSize")
    try:
        instance = (capacity_settings.planned_instance(pool.instance_types, region) if region
                    else pool.instance_types[0])  # fmt: skip
        factors = cap.planning_factors() if cap is not None else DEFAULT_FACTORS
        r = latency.replica(serving.resolved_architecture(), serving.precision, instance, serving.tensor_parallel,
                            serving.kv_cache.resolved_dtype())  # fmt: skip
        workload = latency.Workload(isl=isl, osl=osl)
        kv_fit = math.floor(latency.kv_capacity_tokens(r) / workload.mean_context)
        features = capacity_settings.serving_features(serving, factors)
        pred = latency.predict(r, workload, slo=latency.Slo(ttft_ms=ttft, itl_ms=itl), batch_limit=batch,
                               features=features)  # fmt: skip
    except (catalog.CatalogError, ValueError, LookupError, models.SizingError, AssertionError):
        return Hold(batch, "serving.maxBatchSize", slo_key, None, (batch_step,))
    scale = features.ttft_scale

    def tail(p: latency.Point) -> float:
        wait = p.ttft_ms / 1e3 / scale - p.prefill_s - p.step_s
        return scaling.ttft_p95_ms(p.prefill_s, p.step_s, wait, scale)

    median_ok = [p.batch for p in pred.sweep if p.meets(pred.slo)]
    within = max((p.batch for p in pred.sweep if p.meets(pred.slo) and tail(p) <= p95), default=0)
    infeasible = None
    alone = min(pred.sweep, key=lambda p: p.batch, default=None)
    if within == 0 and alone is not None:
        # Name the SLO that even one request alone misses: the ITL, then the median TTFT, then the p95. No figure
        # in the message: it must read the same under the capacity section's planning factors and without them.
        if alone.itl_ms > itl:
            slo_key = "capacity.slo.itlMs" if explicit_slo is not None else "serving.slo.itlP50Ms"
            infeasible = f"got {itl:g}; one request alone exceeds this ITL"
        elif alone.ttft_ms > ttft:
            infeasible = f"got {ttft:g}; one request alone exceeds this TTFT"
        else:
            slo_key = "serving.slo.ttftP95Ms"
            infeasible = f"got {p95:g}; one request alone exceeds this TTFT p95"
        infeasible += f" on {instance} at TP {serving.tensor_parallel} (planners/latency.py)"
    held = min((batch, "serving.maxBatchSize"), (kv_fit, "the KV cache"), (within, slo_key), key=lambda x: x[0])
    at = next((p for p in pred.sweep if p.batch == within), None)
    slo_value = (f"{within} requests" + (f": TTFT {at.ttft_ms:.0f} ms mean (<= {ttft:g}), {tail(at):.0f} ms p95 "
                 f"(<= {p95:g}), ITL {at.itl_ms:.1f} ms (<= {itl:g})" if at else ""))  # fmt: skip
    tighter = max(median_ok, default=0) > within
    steps = (
        batch_step,
        scaling.Step(
            "KV cache",
            f"{kv_fit} sequences at {workload.mean_context:,.0f} tokens",
            f"planners/latency.py kv_capacity_tokens on {instance} TP {serving.tensor_parallel}",
        ),
        scaling.Step(
            "within the SLO",
            slo_value,
            f"{slo_key}, serving.slo.ttftP95Ms{' (the p95 binds)' if tighter else ''}, planners/latency.py "
            "at isl/osl "
            f"{isl}/{osl}",
        ),
        scaling.Step("a replica holds", f"{held[0]} requests", f"set by {held[1]}"),
    )
    return Hold(held[0], held[1], slo_key, kv_fit, steps, infeasible)


def slo_problems(
    sections: Mapping[str, Any], region: str | None = None, *, autoscaled: bool = True
) -> list[tuple[str, str]]:
    """An SLO no replica can meet even alone: the prefill of ``serving.maxInputLen`` at the planned speed (plus one
    decode step) exceeds ``serving.slo.ttftP95Ms``. A request that long can never see its first token in time,
    whatever the autoscaler does. On an autoscaled stack also a ``minOutputTokensPerSecond`` above what one request
    alone decodes (the ramp check's reasoning; without autoscaling an impossible SLO is the verdict's failure)."""
    from inference_platform.settings import capacity as capacity_settings

    serving, cap = sections.get("serving"), sections.get("capacity")
    pools = getattr(sections.get("nodePools"), "root", None) or {}
    pool = pools.get(getattr(serving, "node_pool", None)) if serving is not None else None
    if serving is None or pool is None or not pool.instance_types:
        return []
    try:
        instance = (capacity_settings.planned_instance(pool.instance_types, region) if region
                    else pool.instance_types[0])  # fmt: skip
        r = latency.replica(serving.resolved_architecture(), serving.precision, instance, serving.tensor_parallel,
                            serving.kv_cache.resolved_dtype())  # fmt: skip
        factors = cap.planning_factors() if cap is not None else DEFAULT_FACTORS
        scale = capacity_settings.serving_features(serving, factors).ttft_scale
        alone_ms = (latency.prefill_seconds(r, serving.max_input_len) + latency.decode_step(r, 1, 1)[0]) * 1e3 * scale
        features = capacity_settings.serving_features(serving, factors)
        isl = getattr(cap, "isl", capacity_settings.DEFAULT_ISL)
        osl = getattr(cap, "osl", capacity_settings.DEFAULT_OSL)
        step = latency.decode_step(r, 1, isl + osl / 2, query_tokens=1 + features.draft_tokens)[0]
        best_rate = features.tokens_per_step / (step * features.itl_scale)
    except (catalog.CatalogError, ValueError, LookupError, models.SizingError, AssertionError):
        return []
    out: list[tuple[str, str]] = []
    wanted = serving.slo.min_output_tokens_per_second
    if autoscaled and wanted > best_rate:
        out.append(("serving.slo.minOutputTokensPerSecond", f"got {wanted:g}; one request alone decodes at most about "
                    f"{best_rate:,.0f} tokens/s on {instance} at TP {serving.tensor_parallel} (planners/latency.py): "
                    "no replica meets it, whatever the autoscaler does; lower it or plan a faster layout"))  # fmt: skip
    p95 = serving.slo.ttft_p95_ms
    if alone_ms <= p95:
        return out
    return [*out, ("serving.slo.ttftP95Ms", f"got {p95:g}; the prefill of serving.maxInputLen ({serving.max_input_len} "
             f"tokens) alone takes {alone_ms:,.0f} ms on {instance} at TP {serving.tensor_parallel} (planners/latency.py"
             "): no replica meets it for a long prompt, whatever the autoscaler does; raise it, lower maxInputLen or "
             "plan a faster layout")]  # fmt: skip


def ramp_problems(
    auto: Any,
    sections: Mapping[str, Any],
    *,
    region: str | None = None,
    slots: int | None = None,
    plan: Any = None,
) -> list[tuple[str, str]]:
    """(key, message) for each autoscaling bound that cannot meet the SLO at ``rampPercentPerHour``.

    Over one scale-up (``ColdStart.scale_up_s``: a new node, or a running one when standby replicas cover a
    scale-up period; inference_platform.planners.cold_start) the load grows by g = ramp x seconds / 3600 of itself, and the replicas running must carry it meanwhile within the SLO. A replica
    holds ``replica_hold`` requests within the SLO, so the autoscaler must act at hold / (1 + g) per replica:

    - ``requests``: targetRequestsPerReplica (explicit, or the derived floor(hold / (1 + g)), never below 1: if even
      1 is too many the ramp or the SLO is refused);
    - ``kvCacheTarget`` (TensorRT-LLM, a second trigger: the HPA follows whichever asks for more replicas):
      it fires at kvCacheTarget x the sequences the KV cache holds, and when that is the first trigger it
      must leave the same headroom;
    - ``queueRatio`` fires only once requests wait for a batch slot, i.e. with a replica already full: it
      leaves no headroom, so it is refused at a ramp unless the KV trigger fires early enough;
    - the day ceiling (maxReplicas, else the capacity plan's or the pool's) must hold the planned peak
      plus the growth of one scale-up, at what a replica holds.

    ``slots``: replicas the serving pool holds at its maxSize; ``plan``: the capacity plan's bounds
    (CapacityBounds), None when the stack plans no demand."""
    if not auto.enabled or auto.ramp_percent_per_hour <= 0:
        return []
    serving = sections.get("serving")
    ceiling = auto.max_replicas if auto.max_replicas is not None else (
        plan.hpa_max_replicas if plan is not None else slots)  # fmt: skip
    inputs = inputs_for(sections, ceiling)
    hold = replica_hold(sections, region)
    if inputs is None or serving is None or hold is None:
        return []
    cs = cold_start.model(inputs)
    ramp = auto.ramp_percent_per_hour / 100
    growth = cold_start.headroom(cs.scale_up_s, ramp)
    batch = serving.max_batch_size
    allowed = hold.requests / (1 + growth)
    why = (f"a scale-up takes {cs.scale_up_s / 60:.1f} min on a {cs.scale_up_path} (modelled, "
           f"planners/cold_start.py) and at autoscaling.rampPercentPerHour {auto.ramp_percent_per_hour:g} "
           f"the load grows {growth:.0%} meanwhile; a replica holds {hold.requests} requests within the SLO "
           f"(set by {hold.limit})")  # fmt: skip
    if hold.requests < 1:
        lead = f"{hold.infeasible}: " if hold.infeasible else ""
        return [(hold.slo_key, f"{lead}no batch meets the TTFT/ITL SLO on this layout: a replica holds no request "
                               "within it, so no autoscaling target can leave headroom")]  # fmt: skip
    out: list[tuple[str, str]] = []
    kv_on = getattr(serving, "backend", None) != "neuron" and hold.kv_fit is not None
    kv_trigger = auto.kv_cache_target * hold.kv_fit if kv_on else None
    # Where the HPA starts adding replicas (requests in flight per replica), and which key sets it.
    triggers: list[tuple[float, str]] = []
    if auto.signal == "requests":
        triggers.append((auto.target_requests(batch, allowed), "autoscaling.targetRequestsPerReplica"))
    if kv_trigger is not None and (auto.signal == "requests" or kv_trigger <= allowed + 1e-9):
        triggers.append((kv_trigger, "autoscaling.kvCacheTarget"))
    if not triggers:
        kv = (
            f"; the KV trigger (kvCacheTarget {auto.kv_cache_target:g}) fires only at {kv_trigger:.1f} requests, "
            f"beyond the {allowed:.1f} that leave the headroom"
            if kv_trigger is not None
            else ""
        )
        out.append(("autoscaling.signal", f"queueRatio scales out only once requests wait for a batch slot, i.e. "
                    f"with each replica already full: it leaves no headroom for the ramp, and {why}{kv}; the "
                    "wait it adds to TTFT is not modelled, so this cannot be judged: use signal requests (or "
                    "rampPercentPerHour 0 to take the risk knowingly)"))  # fmt: skip
        trigger = None
    else:
        trigger = min(t for t, _ in triggers)
    if trigger is not None and trigger > allowed + 1e-9:
        # The HPA follows whichever trigger asks for more replicas: too late only when every one is; name each.
        # A KV trigger beyond what the replica holds never fires before it is full: then the target is the one.
        late = [(t, k) for t, k in triggers if k != "autoscaling.kvCacheTarget" or t <= hold.requests] or triggers
        out += [_trigger_problem(auto, inputs, cs, hold, k, t, allowed, growth, ramp, why) for t, k in late]
    if plan is not None:
        out += _ceiling_problems(auto, serving, plan, slots, hold, growth, why)
    return out


def _trigger_problem(
    auto: Any,
    inputs: cold_start.StartInputs,
    cs: cold_start.ColdStart,
    hold: Hold,
    key: str,
    trigger: float,
    allowed: float,
    growth: float,
    ramp: float,
    why: str,
) -> tuple[str, str]:
    slowest = max(cs.new if cs.scale_up_path == "new node" else cs.running, key=lambda p: p.seconds)
    shorten = (f"shorten the scale-up (slowest: {slowest.name}, {slowest.seconds:.0f} s; coldStart options, "
               "inferctl capacity cold-start)")  # fmt: skip
    if key == "autoscaling.kvCacheTarget":
        assert hold.kv_fit is not None  # ramp_problems adds the KV trigger only where it sized the KV cache
        return (key, f"kvCacheTarget {auto.kv_cache_target:g} fires at {trigger:.1f} of the {hold.kv_fit} sequences "
                     f"the KV cache holds, which leaves too little headroom: {why}, so scale-out must start at "
                     f"{allowed:.1f}; lower it to at most {allowed / hold.kv_fit:.3f} or {shorten}")  # fmt: skip
    if auto.target_requests_per_replica is None:
        # The derived default never goes below 1 request: if 1 is already too many, say what to change.
        max_ramp = (hold.requests - 1) * 3600 / cs.scale_up_s * 100
        name = hold.slo_key if hold.limit == hold.slo_key else "autoscaling.rampPercentPerHour"
        return (name, f"even the lowest autoscaling target (1 request per replica) leaves too little headroom: {why}, "
                      f"so scale-out would have to start at {allowed:.2f} requests per replica; lower "
                      f"autoscaling.rampPercentPerHour to at most {max_ramp:.0f}, relax the SLO ({hold.slo_key}) or "
                      f"{shorten}")  # fmt: skip
    fix = f"lower it to at most {math.floor(allowed)}, {shorten}"
    alone = cold_start.model(replace(inputs, starts_at_once=1))
    if inputs.source == "fsx" and trigger <= hold.requests / (1 + cold_start.headroom(alone.scale_up_s, ramp)) + 1e-9:
        # One pod staging alone would make it: the pods that start together starve on the file system.
        key = "fsx.perUnitStorageThroughput"
        fix = (f"raise the FSx throughput: {inputs.starts_at_once} pods staging at once share "
               f"{inputs.fsx_mb_s:g} MB/s; or lower autoscaling.targetRequestsPerReplica to {math.floor(allowed)}")  # fmt: skip
    return (key, f"targetRequestsPerReplica {trigger:g} leaves too little headroom: {why}, so the SLO holds only at "
                 f"a target of at most {allowed:.1f} ({allowed / hold.requests:.0%} of it); {fix}")  # fmt: skip


def _ceiling_problems(
    auto: Any,
    serving: ServingSettings,
    plan: CapacityBounds,
    slots: int | None,
    hold: Hold,
    growth: float,
    why: str,
) -> list[tuple[str, str]]:
    p = plan.plan
    need = math.ceil(p.peak.output_tps * (1 + growth) / p.option.tokens_per_s_per_replica - 1e-9)
    explicit = auto.max_replicas is not None
    ceiling = auto.max_replicas if explicit else plan.hpa_max_replicas
    if ceiling >= need:
        return []
    pool_key = f"nodePools.{serving.node_pool}.maxSize"
    if not explicit and slots is not None and slots < need:
        key, fix = pool_key, f"raise maxSize so the pool holds {need} replicas (it holds {slots})"
    elif not explicit:
        key, fix = "autoscaling.maxReplicas", f"set it to at least {need} (the plan's ceiling is {ceiling})"
    else:
        key = "autoscaling.maxReplicas"
        fix = f"raise it to at least {need}" + (
            f" (and {pool_key}: the pool holds {slots})" if slots and slots < need else ""
        )
    return [(key, f"day ceiling {ceiling} replica(s) cannot carry the planned peak ({p.peak.output_tps:,.0f} output "
                  f"tokens/s at {p.option.tokens_per_s_per_replica:,.0f} per replica) plus the {growth:.0%} it grows "
                  f"during one scale-up: {why}; {fix}")]  # fmt: skip
