"""NAS on the benchmark: algorithms run against an oracle that charges one budget.

>>> from nasbench_bert import Benchmark, search
>>> t = search.run("regularized_evolution", Benchmark.load(), budget=100, seed=0)
>>> t.best_glue, t.best_arch

* :mod:`.oracle` - tabular, surrogate and regenerated oracles behind one interface;
* :mod:`.algorithms` - random search, regularised evolution, local search, ETAS, and
  :func:`register` for your own;
* :mod:`.runner` - :func:`run`, :func:`compare` (anytime curves), :func:`plot_comparison`.
"""

from .algorithms import ALGORITHMS, register
from .oracle import ORACLES, EvaluationRecord, Oracle, RegeneratedOracle, SurrogateOracle, TabularOracle, make_oracle
from .runner import Trajectory, compare, plot_comparison, run

#: the 0.1 name of :data:`ORACLES`
MODES = ORACLES

__all__ = ["run", "compare", "plot_comparison", "Trajectory", "register", "ALGORITHMS", "ORACLES", "MODES", "Oracle",
           "TabularOracle", "SurrogateOracle", "RegeneratedOracle", "make_oracle", "EvaluationRecord"]
