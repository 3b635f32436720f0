"""The TaskSet domain: API types and validation, the three state machines and their policies (pure),
the Pod and ControlUnit builders, and the reconciler, controller, daemon and Kubernetes adapter around
them. See ``docs/`` for the machines' diagrams, drawn from ``taskset.decide.machines``."""
