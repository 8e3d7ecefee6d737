"""docs/research.md's PettingZoo and OpenSpiel examples run as written (with the research extra)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

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


def test_the_research_pages_agent_plays_in_process_through_the_referee(tmp_path: Path) -> None:
    """Step 1's agent.py (with random weights beside it) is found by `inprocess:agent.py` and plays
    whole games through the referee's own loop, legal moves only."""
    import asyncio

    import numpy as np

    from casino_bot.envs.features import TENSOR_SIZE
    from casino_bot.envs.encoding import NUM_ACTIONS
    from referee.bots.endpoint import BotEndpoint
    from referee.bots.launcher import LOCAL_LAUNCHER
    from referee.match.run import run_match
    from referee.match.spec import MatchSpec

    text = DOC.read_text(encoding="utf-8")
    step = text[text.index("1. **Wrap it.**"):text.index("2. **Regression-test it")]
    agent = re.search(r"```python\n(.*?)```", step, flags=re.S)
    assert agent, "no agent.py in step 1"
    (tmp_path / "agent.py").write_text(textwrap.dedent(agent.group(1)), encoding="utf-8")
    np.save(tmp_path / "weights.npy", np.random.default_rng(1).normal(size=(NUM_ACTIONS, TENSOR_SIZE)))
    greedy = ROOT / "sample_bots" / "greedy" / "greedy_bot.py"
    bots = [BotEndpoint.parse(f"inprocess:{p}", trusted=True) for p in (tmp_path / "agent.py", greedy)]
    match = asyncio.run(run_match(MatchSpec(bots=bots, games=2, seed=3, match_id="doc"), launcher=LOCAL_LAUNCHER))
    records = [game.record for game in match.games]
    assert len(records) == 2 and all(not r.get("failures") for r in records), records[0].get("failures")
    assert records[0]["seats"][0]["hello_name"] == "my-agent", records[0]["seats"]
