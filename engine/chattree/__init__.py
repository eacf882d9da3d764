"""Chat histories as trees (CRyCHIc, "Chat history reconstruction"): for every user
turn, which earlier turn it follows up, or none (a new topic).

- :mod:`analysis`: a prompt's sentences, their labels, its simplified form, and
  whether it is an implicit follow-up (models through Protocols).
- :mod:`insert`: the insert rules, and :class:`ChatTree` for one linear history
  (the Ask pane's).
- :mod:`conversations`: imported ChatGPT/Claude conversations read back as user turns.
- :mod:`tables`: the derived tables and their (idempotent) rebuild.
- :mod:`queries`: reading trees back for the shells.

Qt-free; no module here loads a model.
"""
from engine.chattree.analysis import ChatTreeModels, PromptAnalysis, analyse_prompt
from engine.chattree.insert import ChatTree, Placement, TreeTurn, insert_turn, place

__all__ = ["ChatTree", "ChatTreeModels", "Placement", "PromptAnalysis", "TreeTurn", "analyse_prompt",
           "insert_turn", "place"]
