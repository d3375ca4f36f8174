"""Widgets of the viewer: the message list, the detail pane, the filter bar, the status line."""
