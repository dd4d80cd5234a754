"""The library behind each ``testgen`` command: one module per command, named after what it does."""
