"""The ``nova`` command line."""
