"""``inferctl plan`` and ``inferctl diff``: the command layer over the offline planner
(``inference_platform.offline_plan``): arguments, the preview-like report and the PR comment."""
