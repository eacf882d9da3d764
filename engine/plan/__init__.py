"""The plan language: a whitelisted subset of Python call syntax describing
ReQAP operator trees. ``spec`` is the single source of truth; ``parse``, ``printer``,
``grammar`` and ``validate`` are derived from it; ``expr`` interprets expressions.
Nothing in this package executes a plan against the store."""
from engine.plan.parse import PlanSyntaxError, parse_expression, parse_plan
from engine.plan.printer import print_expr, print_plan
from engine.plan.validate import PlanValidationError, Problem, check_plan, validate_plan

__all__ = ["PlanSyntaxError", "PlanValidationError", "Problem", "check_plan", "parse_expression",
           "parse_plan", "print_expr", "print_plan", "validate_plan"]
