"""`python -m tracer.rules [--write-readme README.md]`: the rule table, rendered from the whole catalog."""

import sys

from tracer.catalog.docs import main
from tracer.rules import all_rules

if __name__ == "__main__":
    sys.exit(main(None, all_rules().values()))
