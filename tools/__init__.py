"""Tools of the repository that are not part of a package (run from the repository root)."""
