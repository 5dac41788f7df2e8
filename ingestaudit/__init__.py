"""ingestaudit: audit the ingestion half of a RAG system, stage by stage, against human labels."""

__version__ = "0.1.0"
