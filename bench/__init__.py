"""Benchmarks of the TaskSet controller against the embedded control plane (``python -m bench``)."""
