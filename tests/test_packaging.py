"""The installed package: console script, ``python -m``, version from Cargo, exit codes."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys

import kmerflow
from conftest import kmerflow as run_kmerflow


def test_console_script_version():
    assert shutil.which("kmerflow"), "the kmerflow console script is not on PATH"
    proc = run_kmerflow("--version")
    assert proc.stdout.decode().strip() == "kmerflow 0.1.0"


def test_python_m_version():
    proc = subprocess.run([sys.executable, "-m", "kmerflow", "--version"],
                          capture_output=True, check=True)
    assert proc.stdout.decode().strip() == "kmerflow 0.1.0"


def test_version_comes_from_cargo():
    assert kmerflow.__version__ == "0.1.0"
    assert importlib.metadata.version("kmerflow") == kmerflow.__version__


def test_help_exits_zero():
    proc = run_kmerflow("--help")
    assert proc.returncode == 0
    assert b"normalize-by-median" in proc.stdout


def test_unknown_subcommand_exits_two():
    proc = run_kmerflow("no-such-command", check=False)
    assert proc.returncode == 2
    assert proc.stderr


def test_typed_package():
    from importlib.resources import files
    assert files("kmerflow").joinpath("py.typed").is_file()
    assert files("kmerflow").joinpath("_core.pyi").is_file()
