"""The ``postprocessing`` model: token ids to text (Python backend)."""
