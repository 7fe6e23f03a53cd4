"""Probes for curate-sample/csvstats#9; test_cN checks review comment N."""

import pytest


def test_c1_unknown_column_is_usage_error(tmp_path, capsys):
    from csvstats.cli import main

    path = tmp_path / "data.csv"
    path.write_text("region;amount\nnorth;1\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main([str(path), "amount"])
    assert info.value.code == 2
    assert "region;amount" in capsys.readouterr().err


@pytest.mark.parametrize("delimiter", [";;", ""])
def test_c2_delimiter_must_be_one_character(tmp_path, delimiter):
    from csvstats.cli import main

    path = tmp_path / "data.csv"
    path.write_text("x\n1\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main([str(path), "x", "-d", delimiter])
    assert info.value.code == 2
