from confmerge import dumps, parse


def test_dumps_sections():
    assert dumps({"a": {"x": "1"}, "b": {"y": "2"}}) == "[a]\nx = 1\n\n[b]\ny = 2\n"


def test_round_trip():
    config = {"server": {"host": "example.org", "port": "8080"}, "log": {"level": "info"}}
    assert parse(dumps(config)) == config


def test_top_level_keys_are_written_first_without_header():
    config = {"a": {"x": "1"}, "": {"name": "demo"}}
    assert dumps(config) == "name = demo\n\n[a]\nx = 1\n"
    assert parse(dumps(config)) == config


def test_output_ends_with_newline():
    assert dumps({"a": {"x": "1"}}).endswith("\n")


def test_empty_config():
    assert dumps({}) == ""
