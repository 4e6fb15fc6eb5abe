"""Pure helpers of the Triton Python models (tokenizers, word lists, request parsing, stopping rules).

Nothing here imports ``triton_python_backend_utils``: the models' ``model.py`` files do the Triton
glue, these modules do the logic and are tested directly.
"""
