"""Maintenance tools run from the checkout (``make lock``, ``make deps-check``): never installed with the wheel."""
