"""The edge: what stands between the internet and Triton (gateway policy, Gateway API objects).

This module is the area's public surface; the modules beside it hold the pieces.
"""

from components.edge.policy import CircuitBreaker, Client, EdgePolicy, Tier

__all__ = ["CircuitBreaker", "Client", "EdgePolicy", "Tier"]
