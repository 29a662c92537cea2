"""`python -m tunnelgw` runs the command line."""

from tunnelgw.cli import main

raise SystemExit(main())
