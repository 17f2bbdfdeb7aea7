"""One module per `motionstaff` subcommand: HELP, add_arguments(parser), run(args) -> int."""
