from confmerge import dumps, parse


def test_dumps_sections():
    assert dumps({"a": {"x": "1"}, "b": {"y": "2"}}) == "[a]\nx = 1\n[b]\ny = 2"


def test_round_trip():
    config = {"server": {"host": "example.org", "port": "8080"}, "log": {"level": "info"}}
    assert parse(dumps(config)) == config
