"""LLM enrichment: analysis, generated tests with a repair loop, and descriptions for each kernel."""
