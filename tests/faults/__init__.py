"""Fault injection: what Piton keeps when the API, the disk, signals or hostile files misbehave."""
