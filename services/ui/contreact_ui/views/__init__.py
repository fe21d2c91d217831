"""One function per page: each reads the projection store (read-only) and returns the
page's model, from which the page's HTML and its JSON are both made. One module per
page family, as ``routes/``: ``runs`` (the listing), ``run`` (a run's page and its
CSV), ``memory``, ``events`` (the log viewer), ``replay``, ``compare`` and
``composer``."""
