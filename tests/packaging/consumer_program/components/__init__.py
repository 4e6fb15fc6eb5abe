"""The consumer's own components package (nothing to do with inference_platform.components)."""
