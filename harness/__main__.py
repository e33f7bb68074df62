"""``python -m harness`` is the ``headscope`` command (also under accelerate/torchrun)."""

import sys

from harness.cli import main

sys.exit(main())
