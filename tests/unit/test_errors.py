"""The error line: one line, its middle cut past the limit; a cycle written out."""

from __future__ import annotations

from traincost.errors import cycle_text, one_line
from traincost.limits import MAX_LINE_CHARS


def test_a_long_message_keeps_its_start_and_end() -> None:
    message = "file.yaml: key " + "x" * 50_000 + "\n expected a number"
    line = one_line(message)
    assert len(line) <= MAX_LINE_CHARS + 40 and "\n" not in line
    assert line.startswith("file.yaml: key ") and line.endswith("expected a number")
    assert f"({len(' '.join(message.split())) - MAX_LINE_CHARS} characters cut)" in line


def test_a_short_message_is_only_joined_onto_one_line() -> None:
    assert one_line("graph 'g' failed:\n  node 'a'\n") == "graph 'g' failed: node 'a'"


def test_a_cycle_longer_than_shown_leaves_out_its_middle() -> None:
    assert cycle_text(["a", "b", "a"]) == "a → b → a"
    assert cycle_text([str(n) for n in [*range(10), 0]]) == "0 → 1 → 2 → … 6 more … → 9 → 0"
