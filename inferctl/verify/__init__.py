"""``inferctl verify``: smoke checks, a short load against the SLOs, logs and GPU use after a rollout."""
