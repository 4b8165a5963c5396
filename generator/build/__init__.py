"""Build: running a build, and the state one build leaves for the next.

Owns the build from start to end (pipeline.py), its stages in order (stages.py)
and what they decide (planning.py), the worker processes, the build cache, the
no-change check, the undo journal, writing and swapping in the site, and the
build's report.

May import: `generator.trust`, `generator.site`, `generator.publish`.
"""
