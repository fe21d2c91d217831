"""A Redis that fails over: where it is (a URL, or the primary its sentinels name) and
the clients made from that (``address``), how far a write that acknowledges work must
have gone (``durability``), and a replicated Redis with sentinels on loopback for the
tests and benchmarks (``local_sentinels``). Kept light: the health check imports it."""
