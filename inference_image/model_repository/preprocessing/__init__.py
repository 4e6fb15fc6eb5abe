"""The ``preprocessing`` model: text and word lists to token ids (Python backend)."""
