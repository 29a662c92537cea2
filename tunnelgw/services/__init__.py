"""Services: what handlers call, owning every unit of work. Shared CRUD and paging,
authentication and principals, accounts, the certificate store, one module per resource
family, fault rules, caches. No HTTP: the caller comes as an argument; the app's database and
settings from the context variables the layers below own."""
