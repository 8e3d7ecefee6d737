"""docs/research.md's PettingZoo and OpenSpiel examples run as written (with the research extra)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

pytest.importorskip("pettingzoo", reason="the research extra is not installed (pip install -e '.[research]')")
pytest.importorskip("pyspiel", reason="the research extra is not installed (pip install -e '.[research]')")

DOC = ROOT / "docs" / "research.md"


def example(section: str) -> str:
    """The first ```python block under the heading ``## section``."""
    text = DOC.read_text(encoding="utf-8")
    body = text[text.index(f"## {section}\n"):]
    found = re.search(r"```python\n(.*?)```", body, flags=re.S)
    assert found, f"no python example under ## {section}"
    return found.group(1)


@pytest.mark.parametrize("section", ["PettingZoo", "OpenSpiel"])
def test_the_research_pages_examples_run_as_written(section: str) -> None:
    scope: dict[str, object] = {}
    exec(compile(example(section), f"{DOC.name}:{section}", "exec"), scope)  # noqa: S102 - our own page
    if section == "PettingZoo":
        env = scope["env"]
        assert env.agents == [], "played to the end: every agent done and removed"
    else:
        assert scope["state"].move_number() > 52, "the deal's 52 chance nodes and a play were applied"
