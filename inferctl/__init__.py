"""inferctl: the one command-line tool of the inference platform (plan, artifacts, serve-local, smoke, ...)."""
