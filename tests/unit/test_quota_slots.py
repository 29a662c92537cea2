"""The slots of quota bound a SQLite writer raised ahead (`tunnelgw.services.quotas._Slots`):
when they may be taken, and when they are given up."""

from __future__ import annotations

from tunnelgw.services import quotas
from tunnelgw.services.quotas import _Slots

KEY = ("acct_a", "http_response_backend")


def _raised(version: int = 7, count: int = 2, quota: int = 100) -> _Slots:
    slots = _Slots()
    assert not slots.take(version, KEY, quota)  # the first admission: nothing kept yet
    slots.add(version, slots.drops, KEY, count, quota)
    return slots


def test_slots_are_taken_one_by_one_while_no_other_connection_committed():
    slots = _raised(count=2)
    assert slots.take(7, KEY, 100)
    assert slots.alone
    assert slots.take(7, KEY, 100)
    assert not slots.take(7, KEY, 100)  # both used


def test_a_commit_by_another_connection_gives_them_up():
    slots = _raised()
    assert not slots.take(8, KEY, 100)
    assert not slots.alone  # and none is raised at this admission
    assert not slots.take(7, KEY, 100)  # not back either


def test_slots_raised_under_another_quota_are_not_taken():
    slots = _raised(quota=100)
    assert not slots.take(7, KEY, 50)


def test_a_drop_gives_up_the_accounts_slots_and_those_of_units_not_yet_committed():
    slots = _raised()
    other = ("acct_b", "http_response_backend")
    slots.add(7, slots.drops, other, 3, 100)
    pending = slots.drops  # a unit raises slots of KEY, then the bound is dropped
    slots.drop("acct_a")
    slots.add(7, pending, KEY, 5, 100)  # that unit commits: its slots do not count
    assert not slots.take(7, KEY, 100)
    assert slots.take(7, other, 100)  # another account's stay


def test_slots_raised_at_an_older_version_do_not_count():
    slots = _raised(version=7)
    drops = slots.drops
    assert not slots.take(8, KEY, 100)  # another connection committed meanwhile
    slots.add(7, drops, KEY, 5, 100)
    assert not slots.take(8, KEY, 100)


def test_the_slots_kept_are_bounded():
    slots = _raised()
    for n in range(quotas.MAX_KEPT):
        slots.add(7, slots.drops, (f"acct_{n}", "tunnel"), 1, 100)
    assert len(slots.left) <= quotas.MAX_KEPT
