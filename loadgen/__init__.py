"""Load generation: LLM-aware Locust users, load shapes, per-request records, worker sizing and the latency
figures of streamed generations. Used by ``inferctl loadtest``/``verify``/``smoke``, the cluster's load-test
Jobs and ``bench``."""
