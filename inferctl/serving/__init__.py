"""Serving commands: ``serve`` (the image entrypoint), ``prepare`` (a Neuron model's compile), ``serve-local`` (the
stack's model on the real Triton server on CPU with the stand-in engine, behind our OpenAI server and the local edge)
and ``smoke`` (end-to-end check against any endpoint)."""
