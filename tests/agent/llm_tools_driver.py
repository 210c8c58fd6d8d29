"""Driver for the llm-tools SIGKILL test: ``python -m tests.agent.llm_tools_driver ROOT RUN_ID start|resume``.

Runs (or resumes) an ``llm-tools`` run under ROOT against the endpoint in ``OPENAI_BASE_URL`` / ``CHIPLORE_MODEL``,
with the scripted verifier and a file-backed scripted knowledge base. Before verifying candidate ``$HANG_AT`` the
verifier writes ``ROOT/verifying`` and sleeps (the test kills it).
"""

import os
import sys
import time
from pathlib import Path

from agent.config import LLMOptions, OptimizeConfig, StopRules
from agent.proposers.llm_tools import ToolCallingProposer
from agent.session import resume_run, run_optimization, start_run
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile


def main() -> None:
    root, run_id, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    hang_at = os.environ.get("HANG_AT")

    def on_call(path: Path) -> None:
        if hang_at and path.name == f"kernel_v{hang_at}.py":
            (root / "verifying").write_text(path.name)
            time.sleep(120)

    if mode == "start":
        config = OptimizeConfig(task="extend_attention", chip="h200", proposer="llm-tools",
                                llm=LLMOptions(retries=0, backoff_s=0.0), stop=StopRules(max_evals=3))
        run, state = start_run(config, run_id=run_id, root=root / "runs")
    else:
        run, state = resume_run(run_id, root=root / "runs")
    verifier = ScriptedVerifier(on_call=on_call)
    proposer = ToolCallingProposer(state.config.llm, state.config.tool_bounds)
    try:
        state = run_optimization(run, state, h200_profile(), verifier, ScriptedKnowledge(path=root / "findings.json"),
                                 proposer=proposer)
    finally:
        proposer.close()
    (root / f"calls-{mode}.txt").write_text("\n".join(verifier.calls))
    print(state.status, state.stop_kind, len(state.evaluations))


if __name__ == "__main__":
    main()
