"""Probes for curate-sample/confmerge#6; test_cN checks review comment N."""


def test_c1_top_level_section_round_trips():
    from confmerge import dumps, parse

    config = {"": {"name": "demo"}, "a": {"x": "1"}}
    assert parse(dumps(config)) == config


def test_c2_output_ends_with_newline():
    from confmerge import dumps

    assert dumps({"a": {"x": "1"}, "b": {"y": "2"}}).endswith("\n")


def test_c3_dumps_has_docstring():
    from confmerge import dumps

    assert (dumps.__doc__ or "").strip()
