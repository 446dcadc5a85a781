"""The write path: building records from an identity, committing them, indexing them."""
