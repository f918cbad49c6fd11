"""The package's version, alone in the bottom layer.

Why a module of its own: the data layer stamps the version into what it writes and
checks it in what it reads (a proxy-values table built by another version is stale),
and the integrations stamp it into their exports. Importing it from the package's
``__init__`` would run upward - ``__init__`` imports the lookup API, which sits on the
data layer - so it lives here and ``nasbench_bert.__version__`` re-exports it.
``tests/test_release_files.py`` checks it against ``pyproject.toml`` and ``CITATION.cff``.
"""

__version__ = "0.3.0.dev0"
