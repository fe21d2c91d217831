"""The `contreact` command."""
