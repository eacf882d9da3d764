"""QUD: the planner. A question becomes an operator tree, written by the local LLM
one step at a time under a grammar derived from the plan language's spec, then
validated. The planner sees only the question (and, for a follow-up, the previous
question) — never user data, so nothing in a mail can steer it."""
from engine.qud.planner import PlanCache, PlannedQuestion, PlanningError, QudPlanner

__all__ = ["PlanCache", "PlannedQuestion", "PlanningError", "QudPlanner"]
