"""A hydra config root for CARP-S: ``task/NASBenchBERT/*.yaml``, the four task configs of
:mod:`nasbench_bert.integrations.carps` (written by its ``write_task_configs``). A package
so that hydra finds it as ``pkg://nasbench_bert.integrations.carps_configs``."""
