"""HTTP transport pieces shared by the proxy addon, the .mitm/HAR readers, the HTTP rules, replay and
mock: header parsing, the recorder that turns exchanges into envelopes, per-connection HTTP state, the
streaming SSE tee, and a minimal HTTP/1.1 client/server (standard library only)."""
