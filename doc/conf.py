"""Sphinx configuration for the operator documentation (``tox -e docs``).

The documents are Markdown (MyST) so they read the same on a code-review
page as in the built HTML.
"""

project = 'contention-aware-placement'
copyright = 'contention-aware-placement developers'
extensions = ['myst_parser']
source_suffix = {'.md': 'markdown', '.rst': 'restructuredtext'}
root_doc = 'index'
# Per-area benchmark results are assembled into benchmarks.md.
exclude_patterns = ['build', 'benchmarks/*', 'requirements.txt']
myst_heading_anchors = 3
html_theme = 'alabaster'
