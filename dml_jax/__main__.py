"""`python -m dml_jax`: the conformance report (see dml_jax._src.conformance)."""

import sys

from dml_jax._src.conformance import main

sys.exit(main())
