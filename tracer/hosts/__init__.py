"""Host config files (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Zed, Gemini CLI,
Codex): where they are, their servers, and in-place edits for `wrap` / `unwrap` / `doctor`."""
