"""Frontends turn one source file (plus its includes) into `Kernel` records."""
