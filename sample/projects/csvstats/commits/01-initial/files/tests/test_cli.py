from csvstats.cli import main


def test_cli_prints_summary(tmp_path, capsys):
    path = tmp_path / "sales.csv"
    path.write_text("region,amount\nnorth,4.5\nsouth,10\neast,20\n", encoding="utf-8")
    assert main([str(path), "amount"]) == 0
    assert capsys.readouterr().out == "count: 3\nminimum: 4.5\nmaximum: 20\nmean: 11.5\n"
