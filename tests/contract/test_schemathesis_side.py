"""Contract tests beside the main run (tests/contract/test_schemathesis.py), each on a
server of its own: the admin API's operations, and the API's again under the platform
profile. A module of their own: under pytest-xdist each runs on whichever process is free,
while the main run's module is kept whole on another (WHOLE_MODULES in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.contract import seed
from tests.contract.test_schemathesis import (
    CONFIG,
    MAX_EXAMPLES,
    MAX_TIME,
    _contract_account,
    _live_server,
    _seed,
    passing_in_two_parts,
)
from tunnelgw.core.settings import Settings

pytestmark = pytest.mark.contract

# The admin API's own run: a server with `--admin-api`, only the `admin` tag (its reset and
# fault rules would pull the rows away from under the main run). These operations skip the
# check that every schema-valid request is accepted (every other check and warning stays):
# - a fixture document and a clock change can be schema-valid and still refused (the fixture
#   format has its own JSON Schema; the clock never moves backwards), and the run does not
#   fail on the warning that most generated documents are refused;
# - a schema-valid agent connect is refused unless its URLs name reserved domains or
#   addresses of the account, which generated ones almost never do
#   (tests/api/test_tunnel_sessions.py);
# - a fault rule on event deliveries needs a status and no latency, and only such a rule
#   names a destination_id: conditions between fields the schema does not express (the
#   handler names the field in its 400; tests/api/test_events.py); a `since` can match its
#   pattern and still be no time (month 00, February 31): 400 ERR_INVALID_PARAMETER.
VALID_YET_REFUSED = (
    "admin.load_fixtures",
    "admin.set_clock",
    "admin.connect_agent",
    "admin.create_fault",
    "admin.list_events",
    "admin.count_events",
)
ADMIN_CONFIG = "".join(
    f'\n[[operations]]\ninclude-operation-id = "{operation}"\n'
    "checks.positive_data_acceptance.enabled = false\n"
    for operation in VALID_YET_REFUSED
)


def test_schemathesis_admin_api(
    tmp_path_factory: pytest.TempPathFactory, settings: Settings
) -> None:
    admin_on = {"TUNNELGW_ADMIN_API": "true"}
    with _live_server(tmp_path_factory, settings, "contract-admin", **admin_on) as (srv, db):
        creds, entries = _contract_account(db.resolved_database_url())
        config = srv.data_dir / "schemathesis-admin.toml"
        base = CONFIG.read_text()
        # Every warning but "most generated data refused" (the fixture document) fails it.
        assert "\nfail-on = true\n" in base
        only = 'fail-on = ["missing_auth", "missing_test_data", "method_not_allowed"]'
        admin_base = srv.data_dir / "schemathesis-admin-base.toml"
        admin_base.write_text(base.replace("\nfail-on = true\n", f"\n{only}\n") + ADMIN_CONFIG)
        admin_entries = [entry for entry in entries if entry[0][1].startswith("admin.")]
        seed.config(admin_base, config, admin_entries)
        report = passing_in_two_parts(
            srv.base,
            creds.token,
            max(60, int(MAX_TIME) // 4),
            "--include-tag",
            "admin",
            # The account operations take the operator token, not the one account key this
            # run sends (tests/api/test_accounts.py covers them and their credential).
            *("--exclude-operation-id", "admin.create_account"),
            *("--exclude-operation-id", "admin.list_accounts"),
            *("--exclude-operation-id", "admin.delete_account"),
            "--max-examples",
            MAX_EXAMPLES,
            *_seed(),
            config=config,
            own_key=creds.api_key_id,
        )
        assert "Selected: 15/" in report, report[-3000:]


@pytest.mark.one_engine  # the profile renders the errors the main run causes on each engine
def test_schemathesis_platform_profile(
    tmp_path_factory: pytest.TempPathFactory, settings: Settings
) -> None:
    """The API operations again under the platform profile, against the spec that server
    publishes (its codes and statuses): a shorter run. Two checks are off because the
    platform answers otherwise than they expect: a request without credentials is 403
    ERR_NGROK_200 (not 401), and a valid request that conflicts with the state is 400 (not
    409), which also makes the "mostly rejected" warning no sign of a wrong schema; the run
    without the profile keeps them all, and the warning that some operation was not reached."""
    profile = {"TUNNELGW_PROFILE": "platform"}
    with _live_server(tmp_path_factory, settings, "contract-profile", **profile) as (srv, db):
        # The seeded rows only: the example world's names are taken already when the runs
        # share one database (PostgreSQL), and the run without the profile reads it.
        creds, entries = _contract_account(db.resolved_database_url())
        api = [entry for entry in entries if not entry[0][1].startswith("admin.")]
        # Conflicts are 400 too, so "mostly rejected" is no sign of a wrong schema here; and
        # the shorter run may not reach every operation ("missing test data"), which the run
        # without the profile checks.
        base = CONFIG.read_text()
        assert "\nfail-on = true\n" in base
        only = 'fail-on = ["missing_auth", "method_not_allowed"]'
        profile_base = srv.data_dir / "schemathesis-profile-base.toml"
        profile_base.write_text(base.replace("\nfail-on = true\n", f"\n{only}\n"))
        config = seed.config(profile_base, srv.data_dir / "schemathesis-profile.toml", api)
        passing_in_two_parts(
            srv.base,
            creds.token,
            max(60, int(MAX_TIME) // 4),
            "--max-examples",
            str(max(5, int(MAX_EXAMPLES) // 4)),
            "--exclude-checks",
            "missing_required_header,positive_data_acceptance",
            *_seed(),
            config=config,
            own_key=creds.api_key_id,
        )
