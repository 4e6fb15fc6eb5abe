"""Template of the ``ensemble`` model: preprocessing -> LLM step -> postprocessing (NVIDIA's contract)."""
