"""The wheel built from a clone, installed as a user installs it (not editable), carries
everything its commands need: `doctor` and the demo run from it, outside the clone."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from lsp_spark.testing import isolated_environment

ROOT = Path(__file__).resolve().parent.parent
PIP_WHEEL = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
"""The build backend is the dev extra's (hatchling), so building asks no registry."""
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_the_wheel_installed_in_a_fresh_environment_runs_doctor_and_the_demo(
    tmp_path: Path,
) -> None:
    # Outside the clone, as a user runs it: nothing on the path but the environment's own.
    environment = isolated_environment(str(tmp_path / "config"))
    environment.pop("PYTHONPATH", None)
    wheels = tmp_path / "wheels"
    built = _run(
        [*PIP_WHEEL, "--wheel-dir", str(wheels), str(ROOT)],
        tmp_path,
        environment,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("lsp_spark-*.whl")

    # A fresh environment whose dependencies are this one's (installing them from the
    # registry would test the registry): lsp-spark itself comes only from the wheel.
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    python = fresh / "bin" / "python"
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        tmp_path,
        environment,
    ).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", str(wheel)],
        tmp_path,
        environment,
    )
    assert installed.returncode == 0, installed.stderr
    where = _run(
        [str(python), "-c", "import lsp_spark; print(lsp_spark.__file__)"], tmp_path, environment
    )
    assert where.stdout.startswith(purelib), where.stdout
    consistent = _run([str(python), "-m", "pip", "check"], tmp_path, environment)
    assert consistent.returncode == 0, consistent.stdout + consistent.stderr

    command = str(fresh / "bin" / "lsp-spark")
    doctor = _run([command, "doctor"], tmp_path, environment)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "reachable: yes" in doctor.stdout
    assert "Traceback" not in doctor.stderr

    demo = _run([command, "demo", "--backend", "loopback"], tmp_path, environment)
    assert demo.returncode == 0, demo.stderr
    summary = ANSI.sub("", demo.stdout)
    assert "4/4 holes got ghost text" in summary, summary
