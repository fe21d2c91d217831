"""What `contreact assess` rates and who rates it (``targets``), and what it prints and
writes (``reports``)."""
