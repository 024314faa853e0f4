"""An OpenPBS server hook that tells mysched of job events, as TORQUE's pbs_server tells its
scheduler: one 4-byte big-endian command (1 new job, 2 a job ended) sent from a reserved port
to mysched's daemon.event_address, which its listener accepts from the server's host. The
hook runs inside pbs_server as root; a contact that fails costs at most 0.2 s and the job's
request goes on. Install it (set ADDRESS to daemon.event_address first):

    qmgr -c "create hook mysched_events event='queuejob,jobobit'"
    qmgr -c "import hook mysched_events application/x-python default openpbs_event_hook.py"

See docs/openpbs.md ("Job events").
"""
import socket
import struct
import pbs

ADDRESS = ("127.0.0.1", 15004)  # mysched's daemon.event_address
e = pbs.event()
cmd = 1 if e.type == pbs.QUEUEJOB else 2  # SCH_SCHEDULE_NEW / SCH_SCHEDULE_TERM (jobobit)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(0.2)
    for port in range(1023, 900, -1):
        try:
            s.bind(("", port))
            break
        except OSError:
            continue
    s.connect(ADDRESS)
    s.sendall(struct.pack(">i", cmd))
    s.close()
except Exception:
    pass
e.accept()
