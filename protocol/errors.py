"""The one exception for bad input: a file, a header or a byte stream that cannot be trusted.

    from protocol.errors import FormatError
    raise FormatError("walk.png: header: 'fps' must be > 0")

The command line prints its message on one line and exits with status 2.
"""


class FormatError(ValueError):
    """Input that is malformed: the message names the thing and the problem."""


def describe(e):
    """One line for an exception: its message's first line, with the type's name unless it is
    bad input (OSError, ValueError) that names itself."""
    text = str(e).strip().split("\n")[0] if e is not None and str(e).strip() else ""
    if isinstance(e, (OSError, ValueError)) and text:
        return text
    return "%s%s" % (type(e).__name__, ": " + text if text else "")
