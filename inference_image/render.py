"""The one error of rendering a model repository from a stack's settings (``llmapi/repository.py`` for the GPU
image's LLM-API model, ``neuron/repository.py`` for the Neuron one): every problem found, in one message.

(The strict ``{{ placeholder }}`` renderer of the removed TensorRT-engine flow's ``config.pbtxt`` templates left
with it: the LLM-API repository writes its ``config.pbtxt`` and ``model.yaml`` from typed values.)
"""

from __future__ import annotations

from collections.abc import Iterable


class RenderError(ValueError):
    """One or more parts of the model repository could not be rendered; the message lists every problem."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("cannot render the model repository: " + "; ".join(self.problems))
