"""Writing outputs: a stage's output either appears whole or not at all, with the mode a plain ``open`` gives.

``atomic_path`` writes each file through a temporary beside it, created with mode 0666 less the umask
(``tempfile.mkstemp`` would give 0600: the user's group could not read results on a shared filesystem) and named
for the process that writes it, so two runs writing the same output never take each other's live temporary for
one a killed run left (the last to finish wins); it names the output in an OS error that does not name a file
(pyarrow's disk-full error names none). ``output_directory`` removes a directory a command created if the command
fails before writing anything into it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "output_directory", "same_file"]


def _temporary_beside(final: Path) -> Path:
    """A new empty file beside ``final``, created as a plain ``open`` would (mode 0666 less the umask), named for
    this process (``.NAME.PID.RANDOM.tmp``)."""
    while True:
        tmp = final.parent / f".{final.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    Args:
        path: the final output file. Its parent directory is created if missing.

    Yields:
        A path in the same directory to write to. It is removed if the block raises.

    Raises:
        OSError: as raised within, naming ``path`` when it named no file or the temporary one.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{glob.escape(final.name)}.*.tmp"):
        if _abandoned(stale, final.name):  # left by a run that was killed (SIGKILL), not one still writing
            stale.unlink(missing_ok=True)
    tmp = _temporary_beside(final)
    try:
        yield tmp
        os.replace(tmp, final)
    except OSError as err:
        if err.filename in (None, str(tmp), tmp):
            raise OSError(err.errno, err.strerror or str(err), str(final)) from err
        raise
    finally:
        tmp.unlink(missing_ok=True)


def _abandoned(tmp: Path, name: str) -> bool:
    """Whether the temporary ``tmp`` of output ``name`` belongs to no running process on this machine: its process
    has ended, or it bears no process id (an older run's)."""
    pid = tmp.name[len(name) + 2 :].split(".", 1)[0]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError):  # no such process; a number no process can have
        return True
    except PermissionError:  # another user's live process
        return False
    return False


@contextlib.contextmanager
def output_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Create the directory ``path`` (and missing parents) for the block; if the block raises, remove those it
    created and that are still empty, so a failed command leaves no empty output directory behind."""
    directory = Path(path)
    created = [parent for parent in (directory, *directory.parents) if not parent.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    try:
        yield directory
    except BaseException:
        for made in created:  # deepest first
            try:
                made.rmdir()
            except OSError:  # not empty (something was written), or gone
                break
        raise


def same_file(output: Path, given: Path) -> bool:
    """Whether writing ``output`` would replace the existing file ``given`` (links and hard links followed)."""
    try:
        return output.exists() and given.exists() and os.path.samefile(output, given)
    except OSError:  # unreadable: compare the paths as written, resolved
        return output.resolve() == given.resolve()
