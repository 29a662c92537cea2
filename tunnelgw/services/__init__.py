"""Services: what handlers call. Shared CRUD and paging, authentication and principals,
accounts, the certificate store, fault rules, caches. No HTTP: they read the current caller,
database and settings from the context variables the layers below own."""
