"""The code behind the generated docs pages (python -m studies.<name>): outside the wheel,
run from a checkout, never imported by the library."""
