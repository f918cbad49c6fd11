"""The data layer: parquet tables, their manifest, the release importer, the Hub, resolution.

* :mod:`.tables` - table names, the manifest, verified reads (:class:`DataDir`), atomic
  versioned writes;
* :mod:`.release` - the authors' release files -> tables (deterministic): fetching
  (:mod:`.release_files`), one parser per benchmark (:mod:`.release_flexibert`,
  :mod:`.release_nlp`, :mod:`.nlp_logs`), the package's own tables joined by arch
  (:mod:`.hardware_table`, :mod:`.proxy_values`);
* :mod:`.hub` - verified, cached downloads from the Hugging Face Hub or a mirror;
* :mod:`.resolve` - where :meth:`nasbench_bert.Benchmark.load` finds the tables;
* :mod:`.schemas` - the JSON Schemas shipped with the package.
"""

from .resolve import ORDER, resolve
from .tables import GLUE_TASKS, TABLES, DataDir, user_cache_dir

__all__ = ["DataDir", "resolve", "ORDER", "TABLES", "GLUE_TASKS", "user_cache_dir"]
