"""What the rule catalog is made of, apart from the rules themselves (they live in tracer/rules,
one module per id block): the registry and its decorators (`registry`), the documentation rendered
from it (`docs`), and helpers several rule modules share (`metakeys`).

This package never imports the rules: `tracer.rules` imports it and registers every rule, so the
dependency runs one way (tracer.rules -> tracer.catalog).
"""
