"""``python -m verify FILE.mlir``: see ``verify.cli`` for the options and why it exists."""

import sys

from .cli import main

sys.exit(main())
