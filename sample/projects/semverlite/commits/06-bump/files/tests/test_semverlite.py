import pytest

from semverlite import Version, bump, compare, is_valid, parse


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


def test_is_valid():
    assert is_valid("1.0.0")
    assert not is_valid("1.0")


def test_parse_prerelease():
    assert parse("1.0.0-rc.1") == Version(1, 0, 0, "rc.1")
    assert parse("2.1.0-alpha") == Version(2, 1, 0, "alpha")


@pytest.mark.parametrize("text", ["1.2.3", "1.0.0-alpha", "2.0.0-rc.1", "0.1.0-x-y.7"])
def test_str_round_trip(text):
    assert str(parse(text)) == text


def test_compare_prereleases():
    assert compare("1.0.0-alpha", "1.0.0-beta") == -1
    assert compare("1.0.0-rc.1", "1.0.0-rc.1") == 0


def test_release_ranks_above_prerelease():
    assert compare("1.0.0", "1.0.0-alpha") == 1
    assert compare("1.0.0-rc.1", "1.0.0") == -1
    assert parse("1.0.0-rc.1") < parse("1.0.0")


def test_numeric_identifiers_compare_as_numbers():
    assert compare("1.0.0-alpha.2", "1.0.0-alpha.10") == -1
    assert compare("1.0.0-1", "1.0.0-alpha") == -1


def test_spec_example_order():
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
    ]
    shuffled = ordered[3:] + ordered[:3]
    assert [str(v) for v in sorted(parse(v) for v in shuffled)] == ordered


@pytest.mark.parametrize("text", ["1.0.0-rc.01", "1.0.0-", "1.0.0-alpha..1", "1.0.0-00"])
def test_rejects_bad_prerelease(text):
    with pytest.raises(ValueError):
        parse(text)


@pytest.mark.parametrize(
    "version, part, expected",
    [
        ("1.2.3", "patch", "1.2.4"),
        ("1.2.3", "minor", "1.3.0"),
        ("1.2.3", "major", "2.0.0"),
        ("v0.9.9", "minor", "0.10.0"),
    ],
)
def test_bump(version, part, expected):
    assert bump(version, part) == expected
