"""The vocabulary every part shares: the records (``types``), the proposer protocol, the
settings, the observer hooks, the metrics, the errors, and the evidence's names. It imports
nothing else of the package."""
