"""The Neuron runtime behind the same OpenAI API: the ``neuron_llm`` Triton model on the LLM-API text contract."""
