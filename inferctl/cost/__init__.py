"""`inferctl cost`: the monthly cost of an offline plan, per resource and per area, and its delta."""
