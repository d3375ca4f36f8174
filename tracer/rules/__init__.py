"""The rule catalog. Importing this package registers every rule family."""

from tracer.rules import correlation, envelope, lifecycle, meta  # noqa: F401
from tracer.rules.registry import REGISTRY, Rule, all_rules, rule, select_rules

__all__ = ["REGISTRY", "Rule", "all_rules", "rule", "select_rules"]
