"""Which call runs when and where: per-(host, model) slots shared through Redis, the
placement of models on hosts, the route scan, the per-host model-check queues, and the
scheduler that takes chat tasks from their routes' streams."""
