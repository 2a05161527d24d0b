"""Context management: the token meter, compaction, large-result store, usage and metrics."""
