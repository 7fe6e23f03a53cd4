"""Probes for curate-sample/confmerge#4; test_cN checks review comment N."""

import pytest


def _merge_files():
    # Tolerate the pre-review name so each probe checks only its own comment.
    import confmerge

    return getattr(confmerge, "merge_files", None) or confmerge.mergefiles


def test_c1_snake_case_name(tmp_path):
    import confmerge

    path = tmp_path / "a.ini"
    path.write_text("[a]\nx = 1\n", encoding="utf-8")
    assert confmerge.merge_files(path) == {"a": {"x": "1"}}


def test_c2_byte_order_mark_is_ignored(tmp_path):
    path = tmp_path / "bom.ini"
    path.write_bytes(b"\xef\xbb\xbf[server]\nport = 80\n")
    assert _merge_files()(path) == {"server": {"port": "80"}}


def test_c3_missing_ok_skips_absent_files(tmp_path):
    path = tmp_path / "base.ini"
    path.write_text("[a]\nx = 1\n", encoding="utf-8")
    merge_files = _merge_files()
    assert merge_files(path, tmp_path / "absent.ini", missing_ok=True) == {"a": {"x": "1"}}
    with pytest.raises(FileNotFoundError):
        merge_files(tmp_path / "absent.ini")
