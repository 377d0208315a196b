"""Sphinx configuration of dml_jax's documentation.

Build (warnings are errors): python -m sphinx -W --keep-going -b html docs docs/_build/html
The operator pages are generated from the registry at build time (docs/_ext/dml_docs.py).
"""

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # this checkout's dml_jax, before any installed one
sys.path.insert(0, str(DOCS / "_ext"))

import dml_jax  # noqa: E402

project = "dml_jax"
author = "The dml_jax developers"
project_copyright = "The dml_jax developers (MIT license)"
version = release = dml_jax.__version__

extensions = [
  "sphinx.ext.autodoc",
  "sphinx.ext.napoleon",
  "myst_parser",
  "dml_docs",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext"]
root_doc = "index"

# `name` in a docstring is a cross-reference where it names a documented object, and code
# otherwise (the docstrings write names in single backticks).
default_role = "py:obj"

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_type_aliases = {
  "ArrayLike": "jax.typing.ArrayLike",
  "FeatureLevelLike": "dml_jax._src.feature_level.FeatureLevelLike",
}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # Attributes: sections as fields, not as separate object entries

myst_heading_anchors = 3

try:
  import furo  # noqa: F401

  html_theme = "furo"
except ImportError:  # the docs extra installs furo; alabaster ships with Sphinx
  html_theme = "alabaster"
html_title = f"dml_jax {release}"
