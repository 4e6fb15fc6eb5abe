"""The ``tensorrt_llm_bls`` model: the ensemble's pipeline as one Python model, with incremental
detokenization for streaming."""
