"""The docs' examples run: every ```pycon block of docs/*.md is a doctest, run in order per page.

The site itself is built by .ci/run (`python -m sphinx -W --keep-going -b html docs
docs/_build/html`); this runs the examples in both x64 modes with the rest of the suite.
"""

import doctest
import pathlib
import re

import jax
import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```pycon\n(.*?)^```", re.M | re.S)
PAGES = [page for page in sorted(DOCS.glob("*.md")) if _BLOCK.search(page.read_text())]


def test_the_pages_have_examples():
  assert {"index.md", "usage.md", "policies.md"} <= {page.name for page in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_page_examples(page):
  text = "\n".join(block + "\n" for block in _BLOCK.findall(page.read_text()))
  parser = doctest.DocTestParser()
  test = parser.get_doctest(text, {}, page.name, str(page), 0)
  flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
  runner = doctest.DocTestRunner(optionflags=flags)
  # With filtering on, JAX adds a note to exceptions raised under its transformations, which
  # the pages leave out of their tracebacks.
  before = jax.config.jax_traceback_filtering
  jax.config.update("jax_traceback_filtering", "off")
  try:
    runner.run(test)
  finally:
    jax.config.update("jax_traceback_filtering", before)
  failed, attempted = runner.summarize(verbose=False)
  assert attempted and not failed, f"{failed} of {attempted} examples in docs/{page.name} failed"
