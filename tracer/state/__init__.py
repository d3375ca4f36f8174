"""The typed state of a session, beside tracer.session: the bounded tables (tables), a remembered
request (requests), the tracking facts (tracking), the HTTP and stdio transports' facts (http,
stdio) and what the sessions of one analysis share (shared). Types only, with read-only queries:
tracer.update is the one writer. Nothing here imports tracer.session or any code that writes, so
the session model imports these without a cycle."""
