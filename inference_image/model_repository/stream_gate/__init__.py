"""The ``stream_gate`` model: the ensemble's last step, where a client's cancel shows (Python backend)."""
