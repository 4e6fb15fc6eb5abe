"""Tests of ``inferctl artifacts`` against moto (in-process and the threaded server on 127.0.0.1)."""
