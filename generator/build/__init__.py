"""Build: running a build, and the state one build leaves for the next.

Owns the pipeline (the only place that knows the order of the stages), the
worker processes, the build cache, the no-change check, the undo journal,
writing and swapping in the site, and the build's report.

May import: `generator.trust`, `generator.site`, `generator.publish`.
"""
