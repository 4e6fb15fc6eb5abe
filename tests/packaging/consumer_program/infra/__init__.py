"""The consumer's own infra package."""
