"""Storage: database connections, units of work, statements, rows as records. Knows tables
only as SQLModel classes handed to it; imports no model module and nothing above."""
