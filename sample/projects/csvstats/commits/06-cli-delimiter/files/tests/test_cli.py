from csvstats.cli import main


def test_cli_prints_summary(tmp_path, capsys):
    path = tmp_path / "sales.csv"
    path.write_text("region,amount\nnorth,4.5\nsouth,10\neast,20\n", encoding="utf-8")
    assert main([str(path), "amount"]) == 0
    assert capsys.readouterr().out == "count: 3\nminimum: 4.5\nmaximum: 20\nmean: 11.5\nmedian: 10\n"


def test_python_dash_m(tmp_path):
    import pathlib
    import subprocess
    import sys

    path = tmp_path / "t.csv"
    path.write_text("x\n1\n3\n", encoding="utf-8")
    root = pathlib.Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "csvstats", str(path), "x"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert result.returncode == 0
    assert "mean: 2" in result.stdout


def test_delimiter(tmp_path, capsys):
    path = tmp_path / "semicolons.csv"
    path.write_text("region;amount\nnorth;1\nsouth;3\n", encoding="utf-8")
    assert main([str(path), "amount", "--delimiter", ";"]) == 0
    assert "mean: 2\n" in capsys.readouterr().out
