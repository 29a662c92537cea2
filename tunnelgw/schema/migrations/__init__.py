"""Alembic migrations of the whole schema (`tunnelgw migrate`)."""
