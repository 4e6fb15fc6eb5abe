"""The OpenAI-compatible API of the serving pod, in front of Triton's ``tensorrt_llm`` model on loopback.

``/v1/models``, ``/v1/chat/completions`` and ``/v1/completions`` (streaming and not), with the model's chat
template, ``usage`` from the engine, ``response_format`` as guided decoding and OpenAI's error shape. The
same code serves in the image and in ``inferctl serve-local`` (there against the real CPU Triton with the
stand-in engine). docs/serving.md, "How the OpenAI API is served", says why it is ours and not Triton's.
"""
