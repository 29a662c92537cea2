"""tunnelgw.crypto.keys: where the key-encryption key comes from, and AES-GCM wrapping."""

from __future__ import annotations

import base64
import logging
import os
import stat
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import SecretStr

from tunnelgw import cli
from tunnelgw.core.settings import Settings
from tunnelgw.crypto import keys

KEK = bytes(range(32))


def test_configured_kek_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNNELGW_KEY_ENCRYPTION_KEY", keys.encode_kek(KEK))
    settings = Settings(data_dir=tmp_path)
    assert keys.load_or_create_kek(settings) == KEK
    assert not (tmp_path / keys.KEK_FILE).exists()
    assert "SecretStr" in repr(settings.key_encryption_key)  # never logged in the clear


def test_configured_kek_padding_and_alphabets():
    unpadded = base64.urlsafe_b64encode(b"\xff" * 32).decode().rstrip("=")
    assert keys.decode_kek(unpadded) == b"\xff" * 32
    assert keys.decode_kek(base64.b64encode(b"\xfb" * 32).decode()) == b"\xfb" * 32
    assert keys.decode_kek(f"  {keys.new_kek()}\n") != keys.decode_kek(keys.new_kek())


@pytest.mark.parametrize("value", ["", "not base64!", keys.encode_kek(b"short"), "A" * 100])
def test_malformed_kek_is_refused(tmp_path, value):
    settings = Settings(data_dir=tmp_path, key_encryption_key=SecretStr(value))
    with pytest.raises(keys.KekError, match="TUNNELGW_KEY_ENCRYPTION_KEY"):
        keys.load_or_create_kek(settings)


def test_kek_file_is_created_once_with_mode_0600(tmp_path):
    settings = Settings(data_dir=tmp_path / "new-dir")
    first = keys.load_or_create_kek(settings)
    path = tmp_path / "new-dir" / keys.KEK_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert keys.load_or_create_kek(settings) == first
    assert len(first) == keys.KEK_BYTES
    assert os.listdir(path.parent) == [keys.KEK_FILE]  # no temporary file left behind


def test_concurrent_first_starts_agree_on_one_kek(tmp_path):
    settings = Settings(data_dir=tmp_path)
    with ThreadPoolExecutor(8) as pool:
        results = set(pool.map(lambda _: keys.load_or_create_kek(settings), range(32)))
    assert len(results) == 1


def test_damaged_kek_file_is_refused(tmp_path):
    (tmp_path / keys.KEK_FILE).write_text("garbage\n")
    (tmp_path / keys.KEK_FILE).chmod(0o600)
    with pytest.raises(keys.KekError, match=keys.KEK_FILE):
        keys.load_or_create_kek(Settings(data_dir=tmp_path))


def test_readable_kek_file_is_used_with_a_warning(tmp_path, caplog):
    path = tmp_path / keys.KEK_FILE
    path.write_text(keys.encode_kek(KEK))
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="tunnelgw.keys"):
        assert keys.load_or_create_kek(Settings(data_dir=tmp_path)) == KEK
    assert "chmod 600" in caplog.text


def test_serve_refuses_to_start_with_a_malformed_kek(tmp_path):
    settings = Settings(data_dir=tmp_path, key_encryption_key=SecretStr("nope"))
    with pytest.raises(SystemExit, match="TUNNELGW_KEY_ENCRYPTION_KEY"):
        cli._prepare_kek(settings)


def test_wrap_unwrap_round_trip():
    blob = keys.wrap(KEK, b"private key", b"sshca_1")
    assert b"private key" not in blob
    assert keys.unwrap(KEK, blob, b"sshca_1") == b"private key"
    assert keys.wrap(KEK, b"private key", b"sshca_1") != blob  # fresh nonce each time


@pytest.mark.parametrize(
    ("kek", "mangle", "aad"),
    [
        (bytes(32), lambda b: b, b"sshca_1"),  # another KEK
        (KEK, lambda b: b, b"sshca_2"),  # copied onto another row
        (KEK, lambda b: b[:-1] + bytes([b[-1] ^ 1]), b"sshca_1"),  # tampered
        (KEK, lambda b: b"\x02" + b[1:], b"sshca_1"),  # unknown format
        (KEK, lambda b: b[:5], b"sshca_1"),  # truncated
        (KEK, lambda b: b"", b"sshca_1"),
    ],
)
def test_unwrap_refuses(kek, mangle, aad):
    blob = keys.wrap(KEK, b"private key", b"sshca_1")
    with pytest.raises(keys.UnwrapError):
        keys.unwrap(kek, mangle(blob), aad)


def test_process_kek_is_initialised_once(tmp_path, monkeypatch):
    monkeypatch.setattr(keys, "_default", None)
    with pytest.raises(RuntimeError, match="not initialised"):
        keys.current()
    loaded = keys.init(Settings(data_dir=tmp_path, key_encryption_key=SecretStr(keys.new_kek())))
    assert keys.current() == loaded


def test_an_activated_kek_wins_over_the_default_and_loads_at_first_use(tmp_path, monkeypatch):
    monkeypatch.setattr(keys, "_default", KEK)
    other = keys.new_kek()
    kek = keys.Kek(Settings(data_dir=tmp_path, key_encryption_key=SecretStr(other)))
    token = keys.activate(kek)
    try:
        assert keys.current() == keys.decode_kek(other)
    finally:
        keys.deactivate(token)
    assert keys.current() == KEK
