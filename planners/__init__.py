"""The planners over the catalog's data: latency and throughput (roofline + calibration), capacity, cold start,
node hours and cost. No Pulumi, no I/O beyond the catalog's data files; the settings, the policy pack,
``inferctl capacity``/``cost`` and consumer programs use them."""
