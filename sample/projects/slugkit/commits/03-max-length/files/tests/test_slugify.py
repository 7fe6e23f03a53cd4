import pytest

from slugkit import slugify


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello World", "hello-world"),
        ("  leading and trailing  ", "leading-and-trailing"),
        ("Héllo, Wörld!", "hello-world"),
        ("crème brûlée", "creme-brulee"),
        ("C'est déjà l'été", "c-est-deja-l-ete"),
        ("version 2.0.1", "version-2-0-1"),
        ("---", ""),
        ("", ""),
    ],
)
def test_slugify(text, expected):
    assert slugify(text) == expected


def test_custom_separator():
    assert slugify("Hello World", sep="_") == "hello_world"


def test_max_length():
    assert slugify("The quick brown fox", max_length=9) == "the-quick"
    assert slugify("short", max_length=50) == "short"
