"""The capture picker describes any file in the captures' directory without failing on it."""

from __future__ import annotations

from ui.screens.picker import describe


def test_a_file_whose_first_line_is_json_but_no_object_is_described_without_its_header(tmp_path):
    path = tmp_path / "not-a-capture.jsonl"
    path.write_bytes(b"[1, 2]\n")
    assert "not-a-capture.jsonl" in describe(path)


def test_a_first_line_past_a_headers_size_is_not_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr("ui.screens.picker.HEADER_MAX", 1024)
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b'{"transport":"stdio","command":["' + b"x" * 4096 + b'"]}\n')
    assert "huge.jsonl" in describe(path) and "x" * 100 not in describe(path)
