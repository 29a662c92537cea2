"""The hostname rules of tunnelgw.rules.hostnames are the spec's ReservedHostname and
IngressHostname schemas (requests are validated by the spec; fixtures by the module)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tunnelgw.rules import hostnames

SCHEMAS = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())[
    "components"
]["schemas"]


@pytest.mark.parametrize(
    ("schema", "pattern"),
    [("ReservedHostname", hostnames.RESERVED), ("IngressHostname", hostnames.INGRESS)],
)
def test_spec_patterns_are_the_modules(schema, pattern):
    assert SCHEMAS[schema]["pattern"] == f"^{pattern.pattern}$"
    assert SCHEMAS[schema]["maxLength"] == hostnames.MAX_LENGTH
