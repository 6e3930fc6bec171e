"""Progress bars follow traincost's log level: `--quiet` (warnings only) silences them, and main leaves no trace."""

from __future__ import annotations

import io
import logging

import pytest

from traincost.cli import main
from traincost.progress import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal_is_off_unless_traincost_logs_at_info(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", _Terminal())
    logger = logging.getLogger("traincost")
    before = logger.level
    try:
        logger.setLevel(logging.WARNING)
        with progress_bar(total=2, desc="quiet") as bar:
            assert bar.disable
        logger.setLevel(logging.INFO)
        with progress_bar(total=2, desc="shown") as bar:
            assert not bar.disable
    finally:
        logger.setLevel(before)


@pytest.mark.parametrize("quiet", [True, False])
def test_main_restores_the_log_level_it_set(quiet: bool, capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("traincost")
    before = logger.level
    assert main([*(["--quiet"] if quiet else []), "models"]) == 0
    assert logger.level == before
    assert "resnet18" in capsys.readouterr().out
