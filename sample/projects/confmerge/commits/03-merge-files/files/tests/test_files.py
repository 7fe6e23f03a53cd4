from confmerge import mergefiles


def test_mergefiles(tmp_path):
    base = tmp_path / "base.ini"
    base.write_text("[server]\nhost = example.org\nport = 80\n", encoding="utf-8")
    local = tmp_path / "local.ini"
    local.write_text("[server]\nport = 8080\n", encoding="utf-8")
    assert mergefiles(base, local) == {"server": {"host": "example.org", "port": "8080"}}


def test_mergefiles_accepts_str_paths(tmp_path):
    path = tmp_path / "only.ini"
    path.write_text("[a]\nx = 1\n", encoding="utf-8")
    assert mergefiles(str(path)) == {"a": {"x": "1"}}
