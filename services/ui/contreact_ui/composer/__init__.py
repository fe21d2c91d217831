"""The config composer: the form and the YAML it makes (``form``), and the form opened on
a recorded run's config (``from_run``). It writes nothing on the server."""
