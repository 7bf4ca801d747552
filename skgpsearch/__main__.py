"""``python -m skgpsearch``: the same as the ``skgpsearch`` command."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
