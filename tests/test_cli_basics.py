import json
import subprocess
import sys

from typer.testing import CliRunner

from ingestaudit.cli import app

HEAVY = ("torch", "spacy", "presidio_analyzer", "unstructured", "lingua", "fitz", "pymupdf", "sentence_transformers")


def test_help_imports_no_heavy_library():
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom ingestaudit.cli import app\n"
            "r = CliRunner().invoke(app, ['--help'])\nassert r.exit_code == 0, r.output\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_runs_the_cli_and_its_exit_codes(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "ingestaudit", "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("ingestaudit ")
    bad = subprocess.run([sys.executable, "-m", "ingestaudit", "run", str(tmp_path), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True)
    assert bad.returncode == 2


def test_validate_names_three_planted_errors_and_exits_2(tmp_path):
    corpus = tmp_path / "c"
    assert CliRunner().invoke(app, ["init", str(corpus)]).exit_code == 0
    assert CliRunner().invoke(app, ["validate", str(corpus)]).exit_code == 0
    truth = corpus / "truth/reports/q3.json"
    data = json.loads(truth.read_text())
    data["headings"][0]["level"] = 0          # 1: level below 1
    data["pii"][1]["end"] = 10_000            # 2: span outside the reference text
    data["lenguage"] = "en"                   # 3: unknown key
    truth.write_text(json.dumps(data))
    r = CliRunner().invoke(app, ["validate", str(corpus)])
    assert r.exit_code == 2
    lines = [l for l in r.stdout.splitlines() if l.startswith("truth/reports/q3.json")]
    fields = sorted(l.split(": ")[1] for l in lines)
    assert fields == ["headings[0].level", "lenguage", "pii[1]"]


def test_init_never_overwrites(tmp_path):
    (tmp_path / "x").write_text("keep")
    r = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert r.exit_code == 2
    assert (tmp_path / "x").read_text() == "keep"


def test_run_on_a_folder_that_is_not_a_corpus_exits_2(tmp_path):
    r = CliRunner().invoke(app, ["run", str(tmp_path), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert not (tmp_path / "out").exists()
