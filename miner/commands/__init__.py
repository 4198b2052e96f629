"""One module per sub-command: HELP, add_arguments(parser), run(args) -> exit code."""
