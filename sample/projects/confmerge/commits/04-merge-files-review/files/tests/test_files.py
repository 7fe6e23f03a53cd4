import pytest

from confmerge import merge_files


def test_merge_files(tmp_path):
    base = tmp_path / "base.ini"
    base.write_text("[server]\nhost = example.org\nport = 80\n", encoding="utf-8")
    local = tmp_path / "local.ini"
    local.write_text("[server]\nport = 8080\n", encoding="utf-8")
    assert merge_files(base, local) == {"server": {"host": "example.org", "port": "8080"}}


def test_merge_files_accepts_str_paths(tmp_path):
    path = tmp_path / "only.ini"
    path.write_text("[a]\nx = 1\n", encoding="utf-8")
    assert merge_files(str(path)) == {"a": {"x": "1"}}


def test_byte_order_mark_is_ignored(tmp_path):
    path = tmp_path / "windows.ini"
    path.write_bytes(b"\xef\xbb\xbf[server]\r\nport = 80\r\n")
    assert merge_files(path) == {"server": {"port": "80"}}


def test_missing_file_raises_by_default(tmp_path):
    with pytest.raises(FileNotFoundError):
        merge_files(tmp_path / "absent.ini")


def test_missing_ok_skips_absent_layers(tmp_path):
    path = tmp_path / "base.ini"
    path.write_text("[a]\nx = 1\n", encoding="utf-8")
    assert merge_files(path, tmp_path / "absent.ini", missing_ok=True) == {"a": {"x": "1"}}
