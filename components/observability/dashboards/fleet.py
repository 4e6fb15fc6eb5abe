"""The accelerator fleet: utilisation, memory, XID, power, per node and per pool (NVIDIA and Neuron).

DCGM names the node ``Hostname``; kube-state-metrics' ``kube_node_labels`` (with the ``node-pool`` and
``accelerator`` labels allowed) maps nodes to pools. neuron-monitor's series carry ``node`` from the
PodMonitor's relabelling.
"""

from __future__ import annotations

from typing import Any

from inference_platform.components.observability import promql as q
from inference_platform.components.observability.dashboards.panels import dashboard, label_variable, series, single

UID = "inference-accelerators"
POOL = 'label_node_pool=~"$pool"'


def _by_pool(metric_by_node: str) -> str:
    """A per-node vector (label ``node``) joined to the node's pool."""
    return f"({metric_by_node}) * on (node) group_left (label_node_pool) {q.NODE_LABELS}{{{POOL}}}"


def build() -> Any:
    gpu_node = 'label_replace({metric}, "node", "$1", "Hostname", "(.*)")'

    def by_node(metric: str, agg: str = "avg") -> str:
        return f"{agg} by (node) ({gpu_node.format(metric=metric)})"

    return (
        dashboard(
            UID,
            "Inference: accelerator fleet",
            "GPU and Neuron utilisation, memory, errors and power per "
            "node and pool. Utilisation is for cost and alerts; scaling follows the LLM's queue.",
            ["accelerators"],
        )
        .with_variable(label_variable("pool", "label_node_pool", q.NODE_LABELS, depends='label_accelerator!=""'))
        .with_panel(single("GPUs", f"count({q.GPU_UTIL})"))
        .with_panel(single("GPU utilisation", f"avg({q.GPU_UTIL}) / 100", unit="percentunit"))
        .with_panel(single("NeuronCores", f"count({q.NEURONCORE_UTIL_RATIO})"))
        .with_panel(single("NeuronCore utilisation", f"avg({q.NEURONCORE_UTIL_RATIO})", unit="percentunit"))
        .with_panel(
            series(
                "GPU utilisation by pool",
                [(f"avg by (label_node_pool) ({_by_pool(by_node(q.GPU_UTIL))}) / 100", "{{label_node_pool}}")],
                unit="percentunit",
            )
        )
        .with_panel(
            series("GPU utilisation by node", [(by_node(q.GPU_UTIL) + " / 100", "{{node}}")], unit="percentunit")
        )
        .with_panel(
            series(
                "GPU memory used by node",
                [(f"{by_node(q.GPU_FB_USED_MIB, 'sum')} * 1048576", "{{node}}")],
                unit="bytes",
            )
        )
        .with_panel(series("GPU power by node", [(by_node(q.GPU_POWER_WATTS, "sum"), "{{node}}")], unit="watt"))
        .with_panel(
            series(
                "Last XID by GPU",
                [(f"max by (Hostname, gpu) ({q.GPU_XID_LAST}) > 0", "{{Hostname}} GPU {{gpu}}")],
                description="DCGM keeps the LAST XID per GPU; a step is a new error (alert GpuXidError).",
            )
        )
        .with_panel(
            series(
                "NeuronCore utilisation by pool and node",
                [
                    (
                        f"avg by (label_node_pool) ({_by_pool(f'avg by (node) ({q.NEURONCORE_UTIL_RATIO})')})",
                        "{{label_node_pool}}",
                    ),
                    (f"avg by (node) ({q.NEURONCORE_UTIL_RATIO})", "{{node}}"),
                ],
                unit="percentunit",
            )
        )
        .with_panel(
            series(
                "Neuron runtime memory by node",
                [(f"sum by (node) ({q.NEURON_RUNTIME_MEMORY_BYTES})", "{{node}}")],
                unit="bytes",
            )
        )
        .with_panel(
            series(
                "Neuron uncorrected ECC events",
                [(f"sum by (node) ({m})", f"{m.rsplit('_', 3)[-3]} {{{{node}}}}") for m in q.NEURON_ECC_UNCORRECTED],
            )
        )
        .build()
    )
