"""Engine builders that run inside the image on a GPU or Neuron node (their frameworks import lazily).

They execute a ``build_plan`` plan; everything they decide is in the plan, which is tested here.
"""
