"""Observability: metrics pipeline, recording rules and alerts, dashboards (``inference:observability``)."""
