"""The ground floor: the vocabulary every stage shares (CPU lists, a load's spec and result, the
latency columns), importing nothing of the package above it."""
