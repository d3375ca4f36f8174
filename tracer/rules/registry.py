"""Old import path of the registry (now tracer.catalog.registry), kept for scripts outside the
package that still import it. New code imports the decorators from `tracer.catalog.registry` and
`all_rules` / `select_rules` from `tracer.rules`."""

from tracer.catalog.registry import (  # noqa: F401
    REGISTRY,
    Rule,
    SelectionError,
    at_end,
    rule,
)


def __getattr__(name: str):
    # lazily: this module may be imported while tracer.rules is still registering its rules
    if name in ("all_rules", "select_rules"):
        import tracer.rules

        return getattr(tracer.rules, name)
    raise AttributeError(name)
