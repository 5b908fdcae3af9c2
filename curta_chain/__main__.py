"""``python -m curta_chain`` runs the CLI."""

import sys

from curta_chain.cli import main

sys.exit(main())
