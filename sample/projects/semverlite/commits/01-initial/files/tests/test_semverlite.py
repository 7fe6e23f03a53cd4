import pytest

from semverlite import Version, compare, parse


def test_parse():
    assert parse("1.2.3") == Version(1, 2, 3)
    assert parse(" v10.0.7 ") == Version(10, 0, 7)


@pytest.mark.parametrize("text", ["", "1", "1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.-2.3"])
def test_parse_rejects(text):
    with pytest.raises(ValueError):
        parse(text)


def test_str():
    assert str(Version(1, 2, 3)) == "1.2.3"


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("1.2.3", "1.2.3", 0),
        ("1.2.3", "1.2.4", -1),
        ("1.10.0", "1.9.3", 1),
        ("2.0.0", "10.0.0", -1),
        ("v1.0.0", "1.0.0", 0),
    ],
)
def test_compare(a, b, expected):
    assert compare(a, b) == expected


def test_sorting():
    versions = [parse(v) for v in ["1.10.0", "1.2.0", "0.9.9", "1.9.0"]]
    assert [str(v) for v in sorted(versions)] == ["0.9.9", "1.2.0", "1.9.0", "1.10.0"]
