"""Pure domain rules: list filters, hostnames, reserved names, the certificate lifecycle's
timing. No database, no HTTP: functions of their arguments and the core layer."""
