"""Benchmarks that print figures (``hindsight bench``). Each writes a Markdown
table and JSON under the results folder, with the commit and machine, and a diff
against the previous run of the same benchmark."""
