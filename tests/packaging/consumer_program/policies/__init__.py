"""The consumer's own policies package: what it allows, read by its infra."""

GPU_INSTANCE_TYPES = ("g6.xlarge", "g6.2xlarge")
