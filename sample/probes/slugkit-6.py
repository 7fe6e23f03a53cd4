"""Probes for curate-sample/slugkit#6; test_cN checks review comment N."""

import pytest


def test_c1_no_trailing_separator_after_cut():
    from slugkit import slugify

    assert slugify("hello world", max_length=6) == "hello"


@pytest.mark.parametrize("max_length", [0, -3])
def test_c2_max_length_below_one_rejected(max_length):
    from slugkit import slugify

    with pytest.raises(ValueError):
        slugify("hello world", max_length=max_length)
