"""One module per enrichment stage; each reads the kernel folder and writes into its enrich/ folder."""
