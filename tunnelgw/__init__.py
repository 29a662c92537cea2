"""tunnelgw: a self-hostable, spec-first server for the Tunnel Gateway Management API."""

__version__ = "0.1.0"

import warnings

# Connexion imports Starlette's test client at import time, which warns about httpx.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
