"""Serving commands: ``serve`` (the image entrypoint), ``prepare`` (engine build), ``serve-local`` (the
real Triton server on CPU with the stand-in) and ``smoke`` (end-to-end check against any endpoint)."""
