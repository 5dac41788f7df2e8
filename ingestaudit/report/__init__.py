"""The report: one data object (`schema.Report`), its aggregation, and renderers that are views of it."""
