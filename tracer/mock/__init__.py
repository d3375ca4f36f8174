"""Mock: serve the server's side of a capture (stdio or Streamable HTTP) to test a host.

tracer.replay.matcher (which recorded request an incoming one stands for) -> engine (what to send:
notifications, server requests, the answer with the caller's id) -> stdio / http transports. Mock
builds on replay's recordings and matcher; replay never imports mock.
"""
