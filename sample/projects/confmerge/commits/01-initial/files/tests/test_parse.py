import pytest

from confmerge import ConfigError, parse


def test_sections_and_keys():
    text = "[server]\nhost = localhost\nport=8080\n\n[log]\nlevel = debug\n"
    assert parse(text) == {
        "server": {"host": "localhost", "port": "8080"},
        "log": {"level": "debug"},
    }


def test_keys_before_first_section():
    assert parse("name = demo\n[a]\nx = 1\n") == {"": {"name": "demo"}, "a": {"x": "1"}}


def test_comments_and_blank_lines():
    text = "# top comment\n\n; another\n[a]\n  # indented comment\nx = 1\n"
    assert parse(text) == {"a": {"x": "1"}}


def test_keys_are_lower_cased_values_kept():
    assert parse("[a]\nKey = Value With Spaces  \n") == {"a": {"key": "Value With Spaces"}}


def test_value_may_contain_equals():
    assert parse("[db]\nurl = postgres://u@h/db?sslmode=require\n") == {
        "db": {"url": "postgres://u@h/db?sslmode=require"}
    }


def test_empty_section_is_kept():
    assert parse("[empty]\n") == {"empty": {}}


@pytest.mark.parametrize("text, lineno", [("[a]\nnot a pair\n", 2), ("[ ]\n", 1), ("= value\n", 1)])
def test_errors_report_line(text, lineno):
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert info.value.lineno == lineno
