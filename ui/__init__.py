"""The Textual viewer (`mcptrace view`, `mcptrace demo`). Imports textual; tracer/ never imports it."""
