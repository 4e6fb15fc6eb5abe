"""TEST DOUBLE: the CPU stand-in for the ``tensorrt_llm`` step.

It echoes the prompt's tokens back one at a time (then ``end_id``, then the prompt again), with a
configurable delay before the first token and between tokens, and honours ``end_id``, stop words,
bad words, ``min_tokens``, ``request_output_len``, streaming and guided decoding (by emitting a
deterministic text that satisfies the guide). Log probabilities are 0 (the echo is certain).
"""
