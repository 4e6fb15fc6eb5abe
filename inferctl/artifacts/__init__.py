"""``inferctl artifacts``: the command over the artifact library (``inference_platform.artifacts``)."""
