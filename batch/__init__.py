"""The asynchronous lane's running code: the OpenAI Batch API service and the SQS queue workers.

``python -m inference_platform.batch api|worker`` (the batch image's entrypoint). The contract with the
cluster side (environment, ports, metrics, IAM, S3 layout, message shape) is ``docs/batch.md``. This
``__init__`` imports nothing: the image's modules load only what their role needs.
"""
