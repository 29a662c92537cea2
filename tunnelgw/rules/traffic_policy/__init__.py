"""Traffic policies of cloud endpoints: parsed from YAML or JSON and checked (phases, rules,
CEL expressions, actions and their config), and the vault secrets they read. Pure: the
handler checks the secrets against the account's vaults."""

from tunnelgw.rules.traffic_policy.document import Policy, parse
from tunnelgw.rules.traffic_policy.expressions import secret_references

__all__ = ["Policy", "parse", "secret_references"]
