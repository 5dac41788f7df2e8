"""Default implementations of the stages under audit (cleaners, PII scrubber, language detector, deduplicator,
chunkers, embedder, index). Each is swappable: a user's own stage plugs in through the ``ingestaudit.stages`` entry
point group or through precomputed outputs."""
