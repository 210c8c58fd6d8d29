"""Which case ids a verification may be restricted to: test cases on the CPU, bench cases on a GPU."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import BadInputError
from kernels.task import TaskSpec


def check_verify_cases(task: TaskSpec, gpu: bool, case_ids: Sequence[str], option: str = "--cases") -> None:
    """Raise BadInputError when a case id is not one this verification checks.

    On a GPU the verifier checks the task's bench cases, on the CPU its (small) test cases; an id of the other kind
    or of no case at all would otherwise be silently dropped. `option` names the input in the message.
    """
    if not case_ids:
        return
    checked = [c.id for c in (task.bench_cases if gpu else task.test_cases)]
    other = {c.id for c in (task.test_cases if gpu else task.bench_cases)}
    unknown = [c for c in case_ids if c not in checked and c not in other]
    elsewhere = [c for c in case_ids if c in other]
    here = (f"on a GPU the verifier checks the bench cases: {', '.join(checked)}" if gpu else
            f"on the CPU the verifier checks the test cases: {', '.join(checked)} (bench cases need a GPU)")
    if unknown:
        raise BadInputError(f"{option} {','.join(unknown)}: unknown case for task {task.name!r}; {here}")
    if elsewhere:
        what = "test case, checked only on the CPU (--device cpu)" if gpu else "bench case, checked only on a GPU"
        raise BadInputError(f"{option} {','.join(elsewhere)}: {what}; {here}")
