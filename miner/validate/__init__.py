"""Running kernel tests in isolated child processes and recording what happened."""
