"""Output paths checked before any work starts: one line naming the path and the problem.

    from host.outpaths import check_output
    check_output(args.record, "--record", overwrite=False)   # a recording is never replaced
    check_output(args.truth, "--truth")                       # folder exists, writable, not a dir
"""

import os


def check_output(path, what, overwrite=True):
    """OSError (FileNotFoundError, IsADirectoryError, PermissionError, FileExistsError) unless
    path can be created (or, with overwrite, replaced) as a regular file."""
    if path is None:
        return
    if not path:
        raise ValueError("%s needs a file name" % what)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory (%s needs a file name)" % what, path)
    if os.path.exists(path):
        if not overwrite:
            raise FileExistsError(17, "File exists (%s never replaces a recording; pick a new name "
                                  "or --record-dir)" % what, path)
        if not os.path.isfile(path):
            raise ValueError("%s: not a regular file (%s)" % (path, what))
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise FileNotFoundError(2, "No such directory for %s" % what, os.path.dirname(path) or d)
    if not os.access(d, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise PermissionError(13, "Permission denied (%s)" % what, path)


def check_folder(path, what):
    """A folder that exists or can be made (its parent exists): OSError otherwise."""
    if os.path.isdir(path):
        if not os.access(path, os.W_OK):
            raise PermissionError(13, "Permission denied (%s)" % what, path)
        return
    if os.path.exists(path):
        raise NotADirectoryError(20, "Not a directory (%s)" % what, path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(2, "No such directory for %s" % what, parent)
