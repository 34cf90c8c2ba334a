"""AndroidWorld-style task templates and suites."""
