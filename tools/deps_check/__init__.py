"""`make deps-check`: what has a newer upstream release than the repository pins (never part of `make test`)."""
