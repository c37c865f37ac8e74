"""The ``ukr`` command line (Typer): one module per command; entry point `app.main`."""
