"""The one exception for bad input: a file, a header or a byte stream that cannot be trusted.

    from protocol.errors import FormatError
    raise FormatError("walk.png: header: 'fps' must be > 0")

The command line prints its message on one line and exits with status 2.
"""


class FormatError(ValueError):
    """Input that is malformed: the message names the thing and the problem."""
