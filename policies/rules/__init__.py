"""Policy rules, one module per kind of resource they guard; each module exports ``POLICIES``."""
