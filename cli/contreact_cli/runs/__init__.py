"""Reading and writing runs as records: the listing, a run's events and state (skipping
what cannot be read), export files, an experiment's forks."""
