"""JSON Schemas of the package's data (installed as ``nasbench_bert.schemas``).

The files live in the repository's top-level ``schemas/`` folder and ship inside the
wheel as package data, so validation works wherever the package is installed; read them
with :func:`nasbench_bert.data.schemas.load_schema`.
"""
