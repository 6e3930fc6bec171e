"""``python -m traincost.cli``: the ``traincost`` command line."""

import sys

from traincost.cli.run import main

sys.exit(main())
