"""Parser adapters: each turns a source `Document` into a `ParsedDocument` (see `base.Parser`)."""
