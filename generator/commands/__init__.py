"""Commands: the `pith-mirror` CLI, the preview server and the rebuild loop.

The only place that parses arguments, prints to the terminal and chooses exit
codes. Nothing in the package imports it.

May import: every other part of the package.
"""
