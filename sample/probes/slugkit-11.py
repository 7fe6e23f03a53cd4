"""Probes for curate-sample/slugkit#11; test_cN checks review comment N."""

import pytest


@pytest.mark.parametrize("text, expected", [("Æble", "aeble"), ("ØRESUND", "oresund"), ("Łódź", "lodz")])
def test_c1_capital_letters_are_transliterated(text, expected):
    from slugkit import slugify

    assert slugify(text) == expected
