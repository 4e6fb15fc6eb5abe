"""`inferctl capacity`: plan replicas, GPUs, pool sizes and cost from tokens/day and a latency SLO."""
