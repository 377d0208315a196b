"""dml_jax's benchmarks: the harness (`benchmarks.harness`), the cases by family
(`benchmarks.cases`), the kernel-form and config studies (`benchmarks.forms_study`), the
tables of committed results (`benchmarks.tables`) and the command line, `benchmarks/run.py`."""
