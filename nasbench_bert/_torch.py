"""PyTorch, for the modules that need it (the ``[torch]`` extra).

Every torch-only module imports it as ``from .._torch import torch`` (the lazy ones inside
the function that needs it), never ``import torch`` first: without PyTorch the user then
gets one line that names the extra, not ``No module named 'torch'`` from deep inside the
package. The error stays a :class:`ModuleNotFoundError` with ``name == "torch"``, so
``except ImportError`` and ``pytest.importorskip`` treat it as before.
"""

from __future__ import annotations

#: the one line a user without PyTorch sees (the CLI prints it alone)
MISSING = ("PyTorch is not installed; nasbench-bert's models, live proxies and hardware measurement need the "
           "[torch] extra: pip install torch==2.13.0 (the CPU build), then pip install 'nasbench-bert[torch]'")

try:
    import torch
except ModuleNotFoundError as e:
    if e.name != "torch":  # torch is there but one of its own imports failed: that error says more
        raise
    raise ModuleNotFoundError(MISSING, name="torch") from None

__all__ = ["MISSING", "torch"]
