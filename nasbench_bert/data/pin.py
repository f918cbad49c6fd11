"""The Hub revision this version of the package loads by default.

``nasbench-bert publish`` rewrites this file after uploading a new version of the tables,
so that a release of the package pins the exact commit of the data it was tested with.
``None`` means nothing has been published for this version yet: the resolution order
(:mod:`nasbench_bert.data.resolve`) then skips the Hub step and says so.
"""

PINNED_REPO_ID: str = "nasbench-bert/nasbench-bert"
PINNED_REVISION: str | None = None
