"""What the viewer needs from the core, without any UI: the background analysis process (annotate)
and its reader (annotations), the compact per-row format, row data for visible rows (viewdata), and
filtering over rows (viewfilter). The Textual app in ui/ reads these; nothing here imports it."""
