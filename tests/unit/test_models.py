"""The models package imports a table's module when its class is first named, so that a server
loads only the tables its requests use; what needs every table loads them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlmodel import SQLModel

from tunnelgw import models

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_class_is_named_by_the_package():
    models.load_all()
    tables = [mapper.class_ for mapper in SQLModel._sa_registry.mappers]
    assert len(tables) == len(SQLModel.metadata.tables)
    for table in tables:
        assert getattr(models, table.__name__) is table


def test_a_resources_table_is_found_by_its_name():
    """A table's module is named as its table: how a quota kind is checked (the `quotas`
    setting) without importing every model."""
    for model in models.RESOURCES:
        assert models.table_named(str(model.__tablename__)) is model
    for name in ("base", "no_such_table", "__init__", "../base", "tunnel.Tunnel", ""):
        assert models.table_named(name) is None, name


LAZY = """
import sys
from tunnelgw.services import auth, events

def loaded():
    return sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("tunnelgw.models."))

before = loaded()
print("vault" in before, auth._model_at("/vaults"))
from tunnelgw.models import Vault
print(loaded() == sorted({*before, "vault"}), auth._model_at("/vaults") is Vault)
print(events._watched(Vault))
import pkgutil
from tunnelgw import models
every = sorted(module.name for module in pkgutil.iter_modules(models.__path__))
print(len(models.RESOURCES) > 30, loaded() == every)
"""


def test_a_table_is_imported_when_first_named_and_then_seen_by_what_scans_them():
    """In a fresh interpreter: naming Vault imports its module alone; the credential check's
    index of collections and the event observer then know it; RESOURCES imports the rest."""
    done = subprocess.run(
        [sys.executable, "-c", LAZY], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "None", "True", "True", "True", "True", "True"]


SERVER = """
import sys
import tunnelgw.cli
import tunnelgw.http.app
print(*sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("tunnelgw.models.")))
"""
# The tables of what a request may use but few accounts do: the events and their routes, fault
# rules, the request journal, IP restrictions (and the tables an event's object shows).
FEATURES = {"event_record", "event_route", "event_source", "event_subscription"}
FEATURES |= {"event_destination"}
FEATURES |= {"fault_rule", "request_journal", "ip_restriction", "ip_policy_rule"}
FEATURES |= {"edge", "edge_route", "tunnel", "tunnel_group_backend", "tunnel_group_member"}


def test_a_server_imports_no_table_of_a_feature_until_it_is_used():
    """In a fresh interpreter: the server's modules (the CLI, the app and every service of
    the request pipeline) import the tables of the credential check and the first start, and
    none of the features that every request asks about (events fire, faults apply, the
    journal records, restrictions admit): those are imported at their first use."""
    done = subprocess.run(
        [sys.executable, "-c", SERVER], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert {"account", "api_key", "principal"} <= loaded
    assert loaded & FEATURES == set()
