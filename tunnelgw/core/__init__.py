"""The bottom layer: errors and their catalog, ids, settings, time, URLs, loading the spec.
Imports nothing else of tunnelgw; every other layer may import it."""
