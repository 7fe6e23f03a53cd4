from confmerge import merge, parse


def test_later_layers_win():
    defaults = parse("[server]\nhost = 0.0.0.0\nport = 80\n")
    local = parse("[server]\nport = 8080\n")
    assert merge(defaults, local) == {"server": {"host": "0.0.0.0", "port": "8080"}}


def test_sections_are_combined():
    assert merge({"a": {"x": "1"}}, {"b": {"y": "2"}}) == {"a": {"x": "1"}, "b": {"y": "2"}}


def test_inputs_are_not_modified():
    first = {"a": {"x": "1"}}
    merge(first, {"a": {"x": "2"}})
    assert first == {"a": {"x": "1"}}


def test_no_layers():
    assert merge() == {}
