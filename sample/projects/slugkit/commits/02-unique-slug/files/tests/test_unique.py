import pytest

from slugkit import unique_slug


def test_free_slug_is_returned_as_is():
    assert unique_slug("Hello World", set()) == "hello-world"


def test_numbers_are_appended():
    taken = {"hello-world", "hello-world-2"}
    assert unique_slug("Hello World", taken) == "hello-world-3"


def test_separator_is_used_for_suffix():
    assert unique_slug("a b", {"a_b"}, sep="_") == "a_b_2"


def test_empty_slug_is_an_error():
    with pytest.raises(ValueError):
        unique_slug("!!!", set())
