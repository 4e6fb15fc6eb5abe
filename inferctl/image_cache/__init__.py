"""`inferctl image-cache build`: the EBS snapshot of the serving image that AL2023 serving nodes mount as containerd's
root (``coldStart.imagePull: cached``; catalog/image_cache.py holds the node side)."""
