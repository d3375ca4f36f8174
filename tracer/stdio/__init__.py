"""The stdio door: the tee (relay threads, zero-copy splice path, the capture process and its sink,
the notes it prints on stderr) and the per-connection framing state the MCP8xx rules read."""
