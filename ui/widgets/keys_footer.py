"""A footer that keeps the keys a newcomer needs on screen at any width.

Textual's Footer lists the screen's keys, then the app's, in declaration order, and cuts what does
not fit: at 80 columns the viewer lost `? Help` and `q Quit`, the two a user looks for first. This
footer puts the essential keys first, and when the full labels do not fit it uses short ones, then
the compact style, so at 80x24 every key is visible.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FULL, SHORT, TIGHT = 0, 1, 2  # full labels; short labels; short labels in the compact style


class KeysFooter(Footer):
    def __init__(self, *, first: tuple[str, ...] = (), short: dict[str, str] | None = None, **kw) -> None:
        """`first`: actions shown first, in this order (the others follow as declared); `short`:
        action -> the label used when the full ones do not fit."""
        super().__init__(**kw)
        self.first = first
        self.short = short or {}
        self.level: int | None = None

    def _keys(self) -> list[tuple[Binding, bool, str]]:
        seen: dict[str, tuple[Binding, bool, str]] = {}
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen:
                seen[binding.action] = (binding, enabled, tooltip)
        rank = {action: i for i, action in enumerate(self.first)}
        declared = list(seen)
        return sorted(
            seen.values(), key=lambda k: (rank.get(k[0].action, len(rank)), declared.index(k[0].action))
        )

    def _label(self, binding: Binding, level: int) -> str:
        return self.short.get(binding.action, binding.description) if level >= SHORT else binding.description

    def _level(self, keys: list[tuple[Binding, bool, str]], width: int) -> int:
        """The widest style whose keys all fit: a key is its display and label with their padding
        (3 cells), or 2 cells (a space and a margin) in the compact style."""

        def need(level: int, extra: int) -> int:
            return sum(
                len(self.app.get_key_display(b)) + len(self._label(b, level)) + extra for b, _, _ in keys
            )

        if need(FULL, 3) <= width:
            return FULL
        return SHORT if need(SHORT, 3) <= width else TIGHT

    def _width(self) -> int:
        return self.size.width or self.app.size.width

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        keys = self._keys()
        self.level = level = self._level(keys, self._width())
        self.compact = level == TIGHT
        self.styles.grid_size_columns = len(keys)
        for binding, enabled, tooltip in keys:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                self._label(binding, level),
                binding.action,
                disabled=not enabled,
                tooltip=tooltip or binding.description,
            ).data_bind(compact=Footer.compact)

    def on_resize(self, event: events.Resize) -> None:
        if (
            self._bindings_ready
            and self.level is not None
            and self._level(self._keys(), event.size.width) != self.level
        ):
            self.call_after_refresh(self.recompose)
