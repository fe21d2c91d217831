"""The wire: how events and bus messages travel. The codec between models and Redis stream
fields, the JSON schema generated from the models, and the messages on the bus that are not
run-log events (tasks for workers, inbox messages for the orchestrator)."""
