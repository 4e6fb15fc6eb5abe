"""Autoscaling of the inference workloads on the LLM's own signals (``inference:autoscaling``).

KEDA ScaledObjects (KEDA creates the autoscaling/v2 HPA) with Prometheus triggers on requests in
flight or NVIDIA's queue/compute ratio and on KV-cache use, HPA behaviour that scales up fast and down
slowly, and a night schedule that lowers the floor and ceiling.
"""
