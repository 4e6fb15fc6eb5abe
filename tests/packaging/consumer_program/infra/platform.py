"""A VPC, a GPU pool, a model store and an inference service from inference_platform's public components."""

from typing import Any

import pulumi_kubernetes as k8s
from components.naming import NamePrefix

from inference_platform.components.compute import NodePool, NodePoolArgs, PoolSpec, profile
from inference_platform.components.network import FlowLogsArgs, Network, NetworkArgs
from inference_platform.components.serving import (
    Exposure,
    InferenceService,
    InferenceServiceArgs,
    ModelSource,
    Placement,
    Resources,
)
from inference_platform.components.storage import ModelStore, ModelStoreArgs
from inference_platform.settings.serving import ServingSettings
from policies import GPU_INSTANCE_TYPES

ACCOUNT = "123456789012"
REGION = "us-west-2"
ZONES = ("us-west-2a", "us-west-2b")
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/consumer"


def build(prefix: NamePrefix) -> dict[str, Any]:
    name = str(prefix)
    network = Network(
        "network",
        NetworkArgs(cidr="10.20.0.0/16", availability_zones=list(ZONES), region=REGION, cluster_name=name,
                    account_id=ACCOUNT, flow_logs=FlowLogsArgs(kms_key_arn=KEY)),
    )  # fmt: skip
    pool = profile(PoolSpec(name="gpu", instance_types=GPU_INSTANCE_TYPES, max_size=2), ZONES)
    NodePool(
        "gpu",
        NodePoolArgs(cluster_name=name, name_prefix=name, kubernetes_version="1.36",
                     node_role_arn=f"arn:aws:iam::{ACCOUNT}:role/{name}-nodes", pool=pool,
                     subnet_ids_by_zone=network.private_subnet_ids_by_zone, security_group_ids=["sg-nodes"],
                     instance_tags={"team": prefix.team}),
    )  # fmt: skip
    store = ModelStore("models", ModelStoreArgs(name_prefix=name, account_id=ACCOUNT, kms_key_arn=KEY))
    InferenceService(
        "llm",
        InferenceServiceArgs(
            k8s_provider=k8s.Provider("cluster", kubeconfig="{}"),
            namespace="inference",
            service_account="triton",
            image=f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{name}/inference:1.0.0",
            image_version="1.0.0",
            serving_config=ServingSettings.model_validate({"model": "Llama-3.1-8B", "precision": "fp8"}),
            model=ModelSource(kind="download", engine_uri="s3://models/engine/v1/", tokenizer_uri="s3://models/tok/v1/",
                              volume_gib=20),
            placement=Placement(pool="gpu", accelerators=1),
            resources=Resources(cpu=3, memory_gib=12),
            region=REGION,
            exposure=Exposure(load_balancer_cidrs=["10.20.192.0/24"]),
        ),
    )  # fmt: skip
    return {"bucket": store.bucket_name}
