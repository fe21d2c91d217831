"""The dashboard's projection of the run logs into its own SQLite store: the process
that follows the logs (``follower``), the rebuild from the archives and Redis
(``rebuild``), the store's tables and writes (``store``), and the cache of decoded
snapshots the replay page folds from (``snapshots``). The pure fold of the tables is
``read_models``."""
