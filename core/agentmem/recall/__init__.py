"""The recall path: candidates from both indexes, fusion, calibration, ranking, budget."""
