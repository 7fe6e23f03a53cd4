"""Probes for curate-sample/semverlite#6; test_cN checks review comment N."""

import pytest


@pytest.mark.parametrize("part", ["mnior", "build"])
def test_c1_unknown_part_rejected(part):
    from semverlite import bump

    with pytest.raises(ValueError):
        bump("1.2.3", part)


@pytest.mark.parametrize(
    "version, part, expected",
    [("1.2.3-rc.1", "patch", "1.2.3"), ("2.0.0-alpha.1", "major", "2.0.0"), ("1.3.0-beta", "minor", "1.3.0")],
)
def test_c2_prerelease_bumps_to_its_release(version, part, expected):
    from semverlite import bump

    assert bump(version, part) == expected


def test_c3_accepts_version_objects():
    from semverlite import Version, bump

    assert str(bump(Version(1, 2, 3), "minor")) == "1.3.0"
