"""Maintenance of a data dir: statistics, export and import, diagnosis."""
