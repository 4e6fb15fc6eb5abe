"""Reusable Pulumi components for LLM inference clusters on AWS, and the pure helpers beside them.

Components receive typed Args and never read Pulumi config, so other Pulumi programs can use them.
"""
