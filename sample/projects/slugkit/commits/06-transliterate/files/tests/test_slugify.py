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


def test_max_length_does_not_end_with_separator():
    assert slugify("hello world", max_length=6) == "hello"
    assert slugify("a b c", sep="_", max_length=4) == "a_b"


@pytest.mark.parametrize("max_length", [0, -3])
def test_max_length_must_be_positive(max_length):
    with pytest.raises(ValueError):
        slugify("hello world", max_length=max_length)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Straße", "strasse"),
        ("smørrebrød", "smorrebrod"),
        ("łódź", "lodz"),
        ("ærø", "aero"),
        ("þing", "thing"),
    ],
)
def test_letters_without_decomposition(text, expected):
    assert slugify(text) == expected
