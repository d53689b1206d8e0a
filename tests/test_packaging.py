"""What ``pip install .`` installs works without the checkout: every package and data file is in the
wheel, the README's Python example and ``python -m hfkv.mappings.coverage`` run from the installed copy.

The install goes into a fresh virtual environment that sees this interpreter's site-packages (so the
dependencies come from there) and is made from the files git tracks or would (not the ignored ones:
builds, caches), as a clean checkout of them has them; the
build backend (setuptools) is fetched from the package index, as ``pip install .`` does.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def package_dirs() -> set[str]:
    """Every package of the source tree, named as it installs (``mappings/`` is ``hfkv.mappings``)."""
    found = set()
    for base, name in (("hfkv", "hfkv"), ("mappings", "hfkv.mappings")):
        for init in (ROOT / base).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / base).parts
            found.add(".".join([name, *parts]))
    return found


def test_every_package_is_listed_for_the_wheel():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert listed == package_dirs(), f"missing {package_dirs() - listed}, stale {listed - package_dirs()}"


def test_every_data_file_is_declared():
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    for path in (ROOT / "hfkv").rglob("*"):
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
            package = ".".join(["hfkv", *path.parent.relative_to(ROOT / "hfkv").parts])
            patterns = data.get(package, [])
            assert any(path.match(p) for p in patterns), f"{path.relative_to(ROOT)} is not package data"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the files a clean checkout holds cannot be told")
    # The files a commit of this tree would hold: tracked ones and new ones git does not ignore.
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    base = tmp_path_factory.mktemp("install")
    source = base / "checkout"
    for name in filter(None, tracked.decode().split("\0")):
        target = source / name
        if (ROOT / name).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    # The build backend comes from the package index, as for `pip install .` (CI reaches the registries).
    build = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(source)],
                           capture_output=True, text=True, env=env, timeout=600)
    if build.returncode != 0 and ("Could not find a version" in build.stderr or "NewConnectionError" in build.stderr):
        pytest.skip("the package index is unreachable: setuptools cannot be fetched to build the wheel")
    assert build.returncode == 0, build.stderr
    return python, source, base


def run_installed(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(HF_HUB_OFFLINE="1", NO_COLOR="1", COLUMNS="100")
    return subprocess.run([python, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_the_installed_copy_is_not_the_checkout(installed):
    python, _, base = installed
    where = run_installed(python, base, "-c", "import hfkv, hfkv.mappings; print(hfkv.__file__, hfkv.mappings.__file__)")
    assert where.returncode == 0, where.stderr
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout


def test_coverage_module_runs_installed(installed):
    python, _, base = installed
    result = run_installed(python, base, "-m", "hfkv.mappings.coverage")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_engine_tables_ship_with_the_wheel(installed):
    python, source, base = installed
    fixture = source / "fixtures" / "meta-llama__Meta-Llama-3.1-8B"
    for engine in ("vllm", "sglang"):
        result = run_installed(python, base, "-m", "hfkv", str(fixture), "--engine", engine, "--gpu", "H100",
                               "--format", "json")
        assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("where", ["checkout root", "elsewhere"])
def test_readme_python_example_runs_installed(installed, where):
    python, source, base = installed
    readme = (source / "README.md").read_text()
    (body,) = re.findall(r"<!-- example -->\s*```python\n(.*?)```", readme, re.S)
    script = base / "readme_example.py"
    script.write_text(
        "import doctest, sys\n"
        f"body = {body!r}\n"
        "test = doctest.DocTestParser().get_doctest(body, {}, 'README', 'README.md', 0)\n"
        "runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)\n"
        "runner.run(test)\n"
        "sys.exit(1 if runner.failures else 0)\n"
    )
    if where == "elsewhere":  # the example's paths are relative to a checkout: give it one beside
        shutil.copytree(source / "fixtures", base / "fixtures", dirs_exist_ok=True)
    cwd = source if where == "checkout root" else base
    result = run_installed(python, cwd, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
