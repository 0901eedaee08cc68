"""`python -S <this file> <Event> --runtime R`: the hook command `cocoplus install` writes.

A script run by path is compiled on every run; the modules it imports are
not.  So this file only makes the directory holding the `cocoplus` package
importable (appended, not prepended: standard-library imports should not
search a crowded site-packages first) and hands over to
`cocoplus.hook.entry.script`, which runs from cached byte code.
"""

import sys

if __name__ == "__main__":
    del sys.path[0]  # this script's own directory
    sys.path.append(__file__.rpartition("/cocoplus/")[0] or ".")
    from cocoplus.hook.entry import script

    script()
