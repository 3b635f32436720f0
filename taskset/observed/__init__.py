"""The observed world: what the controller knows of the cluster, as its caches hold it.

The informers' transforms trim every cached object to what a pass reads (``slim``); a pass reads the
cache through small frozen views, with a Pod found under a replica's name sorted into current, previous
or conflicting (``views``, whose ``Observed`` is the snapshot a decision takes); and the creation proof
tells an object the controller created from one planted under its name (``proof``). Below the decisions
and the integrations that read it; it knows nothing of the objects the controller builds.
"""
