"""The exit codes of every `agentchemist` verb: one table, so a script reads the same code the same way
whichever verb it ran (docs/reference/cli.md, "Exit codes")."""
from __future__ import annotations

OK = 0            #: done: a plan, a completed run, the file written, ready
NO = 1            #: it ran and the answer is no: refused, a question, a run that did not complete, not ready
USAGE = 2         #: usage or input error (argparse's own code too): one line on stderr, no traceback
DAMAGED = 3       #: damaged data found (a bag, a database); the message says what was kept
NO_ENVIRONMENT = 4  #: the ROS 2 environment is not set up, or the graph did not answer in time
INTERRUPTED = 130   #: Ctrl-C before the command finished (128 + SIGINT, as a shell reports it)

TABLE = ((OK, "done: a plan, a completed run, the file written, ready"),
         (NO, "it ran and the answer is no: a refusal or a question, a run that did not complete, not ready"),
         (USAGE, "usage or input error: an unknown option, a missing or unreadable file, a bad value"),
         (DAMAGED, "damaged data: a bag or database with damage (what was kept is said)"),
         (NO_ENVIRONMENT, "the ROS 2 environment is not set up, or the graph did not answer in time"),
         (INTERRUPTED, "interrupted by Ctrl-C before it finished"))


def epilog() -> str:
    """The table as `agentchemist --help` prints it."""
    return "exit codes (every verb):\n" + "\n".join(f"  {code:>3}  {text}" for code, text in TABLE)
