"""CrossGuard policy pack of the inference platform: cost and security rules as importable modules.

``policies/__main__.py`` only builds the PolicyPack (constructing one starts the analyzer server);
``inferctl plan`` imports :mod:`inference_platform.policies.pack` and evaluates the same rules offline.
"""
