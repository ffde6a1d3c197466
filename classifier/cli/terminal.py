"""What reaches the terminal: the standard streams, touched only when a command uses them, and
the one handler that turns whatever ends a command into at most two lines and an exit code.

| exit code | meaning                                                                  |
|-----------|--------------------------------------------------------------------------|
| 0         | done (also when the reader of a pipe went away: ``classify ... \\| head``) |
| 1         | failed at run time: a bad input among good ones, standard output full or |
|           | closed, a full disk, or an internal error (one line; ``-v`` shows the    |
|           | traceback)                                                               |
| 2         | bad input: a usage error, a bad config, file, URI, store or model       |
| 130       | interrupted (Ctrl-C, SIGTERM, SIGHUP); a training run can be resumed    |

Example:
    >>> exit_code_of(SystemExit(None)), exit_code_of(SystemExit(1)), exit_code_of(SystemExit("x"))
    (0, 1, 1)
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from typing import BinaryIO

import click

from classifier.errors import UserError, first_line

INTERRUPTED = 130
#: What click (8.2 on) raises for a group called without a command.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class OutputError(UserError):
    """Standard output cannot be written (closed, or its disk is full): a run-time failure."""

    exit_code = 1


def out(line: str) -> None:
    """Write one line of a command's result to standard output.

    Raises:
        OutputError: standard output is closed or cannot be written.
        BrokenPipeError: its reader went away (the handler ends the command quietly).
    """
    if sys.stdout is None:  # file descriptor 1 was closed when Python started
        raise OutputError("cannot write the output: standard output is closed")
    clear_status()
    try:
        click.echo(line)
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as error:  # ValueError: a closed file object
        raise OutputError(f"cannot write the output: {_reason(error)}") from None


def err(line: str) -> None:
    """Write one line to standard error (after erasing a status line, so that it starts at the
    left margin)."""
    clear_status()
    click.echo(line, err=True)


#: Set while standard output (a terminal) ends in an updating status line.
_status_shown = False
_CLEAR_LINE = "\r\033[K"


def clear_status() -> None:
    """Erase the updating status line, if one is shown, before anything else is written."""
    global _status_shown
    if _status_shown:
        _status_shown = False
        with contextlib.suppress(OSError, ValueError):  # what cannot be shown is no error
            sys.stdout.write(_CLEAR_LINE)
            sys.stdout.flush()


class Progress:
    """Progress lines of long work (training, sweeps): written to standard output while it can
    be; once it cannot (closed, full, its reader gone), one warning on standard error and the
    work goes on without them (the run's record is in MLflow).

    On a terminal, :meth:`status` also shows what is under way on one updating line (see
    :mod:`classifier.runs.live`); elsewhere (a log, a pipe) it shows nothing.

    Example:
        >>> echo = Progress()
        >>> echo("epoch 1/3")
        epoch 1/3
        >>> echo.status("loading the reviews")  # not a terminal here: nothing
    """

    def __init__(self) -> None:
        self.dropped = False
        self.live = _is_terminal(sys.stdout)

    def status(self, text: str) -> None:
        """Show ``text`` on the updating line (cut to the terminal's width)."""
        global _status_shown
        if not self.live or self.dropped:
            return
        width = shutil.get_terminal_size().columns
        try:
            sys.stdout.write(_CLEAR_LINE + text[: max(width - 1, 10)])
            sys.stdout.flush()
            _status_shown = True
        except (OSError, ValueError):
            self.live = False

    def __call__(self, line: str) -> None:
        if self.dropped:
            return
        clear_status()
        try:
            out(line)
        except (OutputError, BrokenPipeError) as error:
            self.dropped = True
            _silence_stdout()
            reason = "its reader went away" if isinstance(error, BrokenPipeError) else error
            click.echo(f"classify: warning: progress lines dropped ({reason})", err=True)


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, OSError, ValueError):
        return False


def stdin_binary() -> BinaryIO | None:
    """The binary standard input, or None when it is closed (only called when ``-`` is read)."""
    stream = sys.stdin
    return None if stream is None else getattr(stream, "buffer", stream)


#: The errors of a full disk or an exhausted quota.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def disk_full(error: BaseException) -> OSError | None:
    """The full-disk error behind ``error``: itself, one it was raised from, or one a library kept
    only as text (MLflow's artifact downloads gather their failures into one message).

    >>> disk_full(RuntimeError("downloading model.keras: [Errno 28] No space left on device")).errno
    28
    >>> disk_full(ValueError("bad")) is None
    True
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in DISK_FULL:
            return error
        for code in DISK_FULL:
            if f"[Errno {code}]" in str(error):
                return OSError(code, os.strerror(code))
        error = error.__cause__ or error.__context__
    return None


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or first_line(error)


def exit_code_of(stop: SystemExit) -> int:
    """The exit status Python gives for ``sys.exit(code)``."""
    if stop.code is None:
        return 0
    return stop.code if isinstance(stop.code, int) else 1


def verbose() -> bool:
    """Whether ``-v`` (or ``CLASSIFY_VERBOSE=1``) asked for tracebacks."""
    return os.environ.get("CLASSIFY_VERBOSE") == "1"


def guarded(command: Callable[[], object], prog: str = "classify") -> int:
    """Run a command (click in non-standalone mode) and return its exit code; every way it
    ends becomes at most two lines on standard error (see the table above)."""
    try:
        try:
            result = _cleared_after(command)
            code = result if isinstance(result, int) else 0
        except SystemExit as stop:
            code = exit_code_of(stop)
        _flush_stdout()
        return code
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except _NO_ARGS_IS_HELP as error:  # `classify` alone: its help on stderr, exit 2
        error.show()
        return error.exit_code
    except click.UsageError as error:
        if error.ctx is not None:
            click.echo(error.ctx.get_usage(), err=True)
        click.echo(f"Error: {error.format_message()}", err=True)
        return error.exit_code
    except click.ClickException as error:
        click.echo(f"{prog}: error: {error.format_message()}", err=True)
        return error.exit_code
    except UserError as error:
        _silence_stdout_if(isinstance(error, OutputError))
        click.echo(f"{prog}: error: {error}", err=True)
        return error.exit_code
    except (KeyboardInterrupt, click.Abort):
        click.echo(f"{prog}: interrupted", err=True)
        return INTERRUPTED
    except Exception as error:  # a bug: one line, the traceback under -v
        full = disk_full(error)
        if full is not None:  # not a bug: the machine's
            where = f" writing {full.filename}" if full.filename else ""
            click.echo(
                f"{prog}: error: the disk is full ({_reason(full)}{where}): free some space and "
                "run it again (a stopped training run continues with classify train --resume)",
                err=True,
            )
            return 1
        if verbose():
            traceback.print_exc()
        line = f"{type(error).__name__}: {first_line(error)}"
        click.echo(f"{prog}: internal error: {line} (run with -v for the traceback)", err=True)
        return 1


def _cleared_after(command: Callable[[], object]) -> object:
    """Run ``command``; however it ends, erase the status line it left (so that an error line
    starts at the left margin)."""
    try:
        return command()
    finally:
        clear_status()


def _flush_stdout() -> None:
    """Flush standard output now, so that a full disk is reported, not lost at exit."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as error:
        raise OutputError(f"cannot write the output: {_reason(error)}") from None


def _silence_stdout_if(condition: bool) -> None:
    if condition:
        _silence_stdout()


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so that Python's flush at exit finds nothing to
    complain about (the buffered lines are dropped)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass
