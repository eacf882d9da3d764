"""Insights over chat logs: per-conversation attributes inferred locally (summary,
keywords, topic and subtopic of a taxonomy discovered over the user's own
conversations, language, local time) and PROBE, which answers aggregative questions
("what did I ask about most this spring?") with ranked, counted values.

Qt-free. Models enter through the Protocols of :mod:`engine.protocols`; the derived
tables are this package's own (:mod:`engine.insights.tables`) and are written only
through the store's single writer.
"""
