"""Dataset formats of other tools (TritonBench, GEAK): import as a source, export from a dataset."""
