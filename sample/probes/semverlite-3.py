"""Probes for curate-sample/semverlite#3; test_cN checks review comment N."""

import pytest


def test_c1_release_ranks_above_prerelease():
    from semverlite import compare

    assert compare("1.0.0", "1.0.0-alpha") == 1
    assert compare("1.0.0-rc.1", "1.0.0") == -1


def test_c2_numeric_identifiers_compare_numerically():
    from semverlite import compare

    assert compare("1.0.0-alpha.2", "1.0.0-alpha.10") == -1


@pytest.mark.parametrize("text", ["1.0.0-rc.01", "1.0.0-00"])
def test_c3_leading_zeros_rejected(text):
    from semverlite import parse

    with pytest.raises(ValueError):
        parse(text)
