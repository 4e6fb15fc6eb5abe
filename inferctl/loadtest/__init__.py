"""Load tests on Locust (master/worker): LLM-aware users, load shapes, per-request records, reports."""
