"""Storage: the records store (system of record) and the two derived indexes."""
