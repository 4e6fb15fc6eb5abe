"""``inferctl loadtest``: the command layer and chart over the load-generation library
(``inference_platform.loadgen``)."""
