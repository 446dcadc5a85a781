"""Derived memories: ingestion and extraction, supersession, retention, answers."""
