"""Training memory: liveness analysis of a Workload, and the same quantities measured in torch."""
