"""The schema's history: Alembic migrations of the tables in `models/`, and bringing a
database to the newest revision (`migrate`). Sits above the models its migrations describe."""
