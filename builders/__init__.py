"""Builders: release import, ELECTRA pretraining, GLUE finetuning, entries, Hub publishing."""
