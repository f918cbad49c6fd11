"""``python -m nasbench_bert.cli``: the ``nasbench-bert`` command."""

import sys

from nasbench_bert.cli import main

if __name__ == "__main__":  # imported (a module walk, the docs' API pages) it runs nothing
    sys.exit(main())
