"""Screens of the viewer: the capture view, the summary, help, the capture picker, a body view."""
