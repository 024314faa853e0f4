"""What OpenPBS's accounting records (``/var/spool/pbs/server_priv/accounting/YYYYMMDD``) say
beyond TORQUE's, read per record: no option or setting names the product.

OpenPBS (``src/server/accounting.c``) writes the same ``MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value``
lines as TORQUE, from the same ancestor. Its records differ in what a reader must not get wrong:

- a job's cores are in ``exec_vnode`` (``(cn01:ncpus=4)+(big[0]:ncpus=8+big[1]:ncpus=8)``) and in
  ``exec_host`` as ``host/N*ncpus`` (read by `parse_exec_host`), else in ``resources_used.ncpus``,
  ``Resource_List.ncpus`` or ``Resource_List.select`` -- never ``total_execution_slots``;
- nodes are vnodes, named in ``exec_vnode`` (``exec_host`` names hosts);
- an ``R`` (requeue) record carries the usage of the run that was requeued, as an ``E`` does:
  that run happened, so it is charged (the job's next run has its own start and ``E``);
- a job array as a whole (``123[].server``) gets an ``E`` spanning all its subjobs, which have
  their own: it charges nothing;
- values with blanks are quoted (``project="ATLAS prod"``), and record types TORQUE lacks (``L``,
  ``a``, ``s``, ``u``, ``e``, reservations) are skipped.
"""

from __future__ import annotations

from mysched.backends.openpbs.values import parse_exec_vnode, parse_select

__all__ = ["array_whole", "charged_run", "parse_exec_vnode", "select_cores", "unquote"]


def array_whole(job_id: str) -> bool:
    """Whether a job id names a job array as a whole (``123[].server``), not one of its subjobs."""
    return "[]" in job_id


def charged_run(rtype: str, attrs: dict[str, str]) -> bool:
    """Whether a record is the end of a run to charge: every ``E``, and an ``R`` that says when
    the run it requeued ended (OpenPBS's, written as an ``E`` is; TORQUE writes its ``R`` bare,
    and OpenPBS leaves out ``resources_used`` when no usage came from the node, as for a job
    killed seconds after its start)."""
    return rtype == "E" or rtype == "R" and "end" in attrs


def unquote(value: str) -> str:
    """A value as OpenPBS's ``cpy_quote_value`` wrote it, without its quotes: ``"a b"`` (or
    ``'a "b"'`` when it holds a double quote) -> the value. Only a value with a blank is
    quoted so: anything else is kept as it is (``"ops"``, a TORQUE name that is all quotes)."""
    if len(value) > 2 and value[0] in "\"'" and value[-1] == value[0] and " " in value:
        return value[1:-1]
    return value


def select_cores(text: str) -> int:
    """Cores of a ``select`` request: ``2:ncpus=4:mpiprocs=4+1:ncpus=1`` -> 9 (the backend's one
    reading of ``select``); ValueError if malformed."""
    return sum(c.count * c.ncpus for c in parse_select(text))
