"""The schema's history: Alembic's migrations of the tables in `models/` (`env.py`,
`versions/`; `tunnelgw migrate`), and bringing a database to the newest revision (`migrate`).
Sits above the models its migrations describe."""
