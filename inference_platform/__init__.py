"""inference_platform: Pulumi components, settings and policies for LLM inference clusters on AWS, and the
``inferctl`` tool.

Everything the distribution installs lives under this one name, so a program's own ``components/``,
``infra/`` or ``policies/`` folder cannot shadow it. The repository keeps one folder per area; ``setup.py``
maps each folder into this namespace (``inference_platform.components`` is ``components/``, and so on).
"""

__version__ = "0.2.0"
